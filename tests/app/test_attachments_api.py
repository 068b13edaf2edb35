"""POST /api/chats/{id}/attachments and GET /api/attachments/{id}[/content]: sniffing,
limits, ownership, serving, and deletion with the chat. Real SQLite/PostgreSQL, real
files under the data dir."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from apptest import Running, User, make_settings, running
from sqlalchemy import func, select

from app.settings import Settings
from storage.blobs import BlobMissing
from storage.engine import Database
from storage.models import attachments
from tests.support.files import PDF, png
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, local_s3

LIMIT = 4096


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path, attachment_max_bytes=LIMIT)


async def upload(
    api: Running,
    user: User,
    data: bytes,
    name: str = "file.bin",
    declared: str = "application/octet-stream",
    chat: str = "chat-1",
) -> tuple[int, dict]:
    response = await api.client.post(
        f"/api/chats/{chat}/attachments",
        files={"file": (name, data, declared)},
        headers=user.auth,
    )
    return response.status_code, response.json()


async def stored(db: Database, data_dir: Path) -> tuple[int, list[Path]]:
    async with db.session() as session:
        rows = await session.scalar(select(func.count()).select_from(attachments))
    blobs = [p for p in (data_dir / "attachments").rglob("*") if p.is_file()]
    return int(rows or 0), blobs


async def test_a_png_named_txt_is_a_png_and_is_served_back_as_one(
    api: Running, alice: User
) -> None:
    image = png(64, 48)
    status, body = await upload(api, alice, image, "holiday.txt", "text/plain")
    assert status == 201, body
    assert body["content_type"] == "image/png"
    assert (body["width"], body["height"]) == (64, 48)
    assert body["name"] == "holiday.txt" and body["size"] == len(image)
    assert body["sha256"] == hashlib.sha256(image).hexdigest()
    assert body["chat_id"] == "chat-1" and body["sent"] is False

    details = await api.client.get(f"/api/attachments/{body['id']}", headers=alice.auth)
    assert details.json() == body
    content = await api.client.get(f"/api/attachments/{body['id']}/content", headers=alice.auth)
    assert content.status_code == 200 and content.content == image
    assert content.headers["content-type"] == "image/png"
    assert content.headers["x-content-type-options"] == "nosniff"
    assert content.headers["content-disposition"].startswith('inline; filename="holiday.txt"')
    assert "sandbox" in content.headers["content-security-policy"]


async def test_text_is_served_as_a_utf8_download_never_html(api: Running, alice: User) -> None:
    text = "Grüße\nnot <b>html</b>\n".encode()
    status, body = await upload(api, alice, text, "notes/../grüße.md", "text/html")
    assert status == 201, body
    assert body["content_type"] == "text/markdown" and body["name"] == "grüße.md"
    content = await api.client.get(f"/api/attachments/{body['id']}/content", headers=alice.auth)
    assert content.headers["content-type"] == "text/markdown; charset=utf-8"
    disposition = content.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="gr__e.md"')
    assert "filename*=UTF-8''gr%C3%BC%C3%9Fe.md" in disposition


@pytest.mark.parametrize(
    ("data", "declared", "status", "words"),
    [
        (b"<!DOCTYPE html><script>alert(1)</script>", "image/png", 415, "HTML"),
        (b"<svg onload=alert(1)>", "image/svg+xml", 415, "markup"),
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)), "text/plain", 415, "UTF-8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png", 415, "header is broken"),
        (b"", "text/plain", 400, "empty"),
        (b"x" * (LIMIT + 1), "text/plain", 413, "at most 4,096 bytes"),
    ],
    ids=["html-as-png", "svg", "zip", "cut-png", "empty", "too-large"],
)
async def test_refused_uploads_store_nothing(
    api: Running,
    alice: User,
    db: Database,
    settings: Settings,
    data: bytes,
    declared: str,
    status: int,
    words: str,
) -> None:
    got, body = await upload(api, alice, data, "a.png", declared)
    assert got == status, body
    assert body["error"]["code"] == "invalid_request"
    assert words in body["error"]["message"]
    assert await stored(db, settings.data_dir) == (0, [])


async def test_a_type_left_out_of_the_settings_is_refused(
    database_url: str, tmp_path: Path, alice: User
) -> None:
    settings = make_settings(database_url, tmp_path, attachment_types="image/png,text/plain")
    async with running(settings) as api:
        status, body = await upload(api, alice, PDF, "report.pdf", "application/pdf")
    assert status == 415
    assert "PDF documents (application/pdf) are not accepted" in body["error"]["message"]


async def test_a_huge_declared_length_is_refused_before_the_body_is_read(
    api: Running, alice: User, db: Database, settings: Settings
) -> None:
    read: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        read.append(1)
        yield b"--x\r\n"

    response = await api.client.post(
        "/api/chats/chat-1/attachments",
        content=body(),
        headers=alice.auth
        | {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(10**12)},
    )
    assert response.status_code == 413
    assert "declares 1,000,000,000,000 bytes" in response.json()["error"]["message"]
    assert await stored(db, settings.data_dir) == (0, [])


async def test_a_body_longer_than_the_limit_is_cut_off_whatever_it_declared(
    api: Running, alice: User, db: Database, settings: Settings
) -> None:
    chunks_sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal chunks_sent
        yield (
            b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
            b"Content-Type: text/plain\r\n\r\n"
        )
        for _ in range(1000):  # 1 MB in all, far past the limit
            chunks_sent += 1
            yield b"a" * 1024

    # No Content-Length (chunked): only the counter can stop it.
    response = await api.client.post(
        "/api/chats/chat-1/attachments",
        content=body(),
        headers=alice.auth | {"Content-Type": "multipart/form-data; boundary=x"},
    )
    assert response.status_code == 413, response.text
    assert chunks_sent < 1000
    assert await stored(db, settings.data_dir) == (0, [])


async def test_not_a_form(api: Running, alice: User) -> None:
    response = await api.client.post(
        "/api/chats/chat-1/attachments", json={"file": "x"}, headers=alice.auth
    )
    assert response.status_code == 415
    assert "multipart/form-data" in response.json()["error"]["message"]
    response = await api.client.post(
        "/api/chats/chat-1/attachments",
        files={"other": ("a.txt", b"hello", "text/plain")},
        headers=alice.auth,
    )
    assert response.status_code == 400
    assert "no file part named 'file'" in response.json()["error"]["message"]


async def test_another_users_chat_and_attachment_answer_404(
    api: Running, alice: User, bob: User, db: Database, settings: Settings
) -> None:
    status, body = await upload(api, alice, b"alice's notes", "notes.txt")
    assert status == 201
    status, refused = await upload(api, bob, b"bob's notes", "notes.txt", chat="chat-1")
    assert status == 404 and refused["error"]["code"] == "not_found"
    for path in (f"/api/attachments/{body['id']}", f"/api/attachments/{body['id']}/content"):
        response = await api.client.get(path, headers=bob.auth)
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "attachment not found"
    assert (await stored(db, settings.data_dir))[0] == 1


async def test_deleting_the_chat_deletes_its_attachments_and_their_bytes(
    api: Running, alice: User, db: Database, settings: Settings
) -> None:
    await upload(api, alice, png(4, 4), "a.png", chat="chat-1")
    await upload(api, alice, b"keep me", "b.txt", chat="chat-2")
    rows, blobs = await stored(db, settings.data_dir)
    assert (rows, len(blobs)) == (2, 2)

    response = await api.client.delete("/api/chats/chat-1", headers=alice.auth)
    assert response.status_code == 204
    rows, blobs = await stored(db, settings.data_dir)
    assert rows == 1 and [blob.read_bytes() for blob in blobs] == [b"keep me"]


async def test_the_s3_store_keeps_and_deletes_the_bytes(
    database_url: str, tmp_path: Path, alice: User
) -> None:
    with local_s3() as s3:
        settings = make_settings(
            database_url,
            tmp_path,
            attachment_store="s3",
            attachment_s3_bucket=s3.bucket,
            attachment_s3_endpoint=s3.endpoint,
            attachment_s3_access_key_id=ACCESS_KEY,
            attachment_s3_secret_access_key=SECRET_KEY,
        )
        image = png(3, 2)
        async with running(settings) as api:
            status, body = await upload(api, alice, image, "dot.png")
            assert status == 201, body
            content = await api.client.get(
                f"/api/attachments/{body['id']}/content", headers=alice.auth
            )
            assert content.content == image
            record = await api.services.attachments.repo.get(alice.id, body["id"])
            assert record is not None
            blobs = api.services.attachments.blobs
            assert await blobs.get(record.blob_key) == image
            assert not (tmp_path / "attachments").exists()  # nothing went to the disk

            assert (
                await api.client.delete("/api/chats/chat-1", headers=alice.auth)
            ).status_code == 204
            with pytest.raises(BlobMissing):
                await blobs.get(record.blob_key)
