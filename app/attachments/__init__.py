"""Files a person attaches to a prompt: upload, sniffing, storage, the model's view of them."""
