"""Chat storage: SQLAlchemy 2 async models, engine set-up, repositories, migrations."""
