"""The blob store the settings ask for (``SWITCHBOARD_ATTACHMENT_STORE``)."""

from __future__ import annotations

from app.settings import Settings
from storage.blobs import BlobStore, LocalBlobStore


def blob_store_for(settings: Settings) -> BlobStore:
    if settings.attachment_store == "s3":
        try:
            from storage.blobs_s3 import S3BlobStore
        except ImportError:
            raise RuntimeError(
                "SWITCHBOARD_ATTACHMENT_STORE=s3 needs the s3 extra: "
                "pip install 'switchboard-server[s3]'"
            ) from None
        secret = settings.attachment_s3_secret_access_key
        return S3BlobStore(
            settings.attachment_s3_bucket or "",
            endpoint=settings.attachment_s3_endpoint,
            region=settings.attachment_s3_region,
            access_key_id=settings.attachment_s3_access_key_id,
            secret_access_key=secret.get_secret_value() if secret is not None else None,
        )
    return LocalBlobStore(settings.data_dir / "attachments")
