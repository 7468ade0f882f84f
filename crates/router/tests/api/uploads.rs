//! Temporary uploads end to end (section I, Q-06..Q-11, GP-39..GP-41,
//! issue 18): real multipart bodies with real image bytes against the
//! filesystem object store, the check order, quotas and rates under
//! concurrency, deletion, expiry and purge through the jobs, and the
//! account's zero-data-retention switch.

use crate::harness::*;
use futures::future::join_all;
use router_uploads::UploadSettings;
use serde_json::{Value, json};
use std::time::Duration;

const MIB: usize = 1024 * 1024;
const MAX_FILE: usize = 10 * MIB;
const MAX_ENVELOPE: usize = MAX_FILE + 64 * 1024;
const BOUNDARY: &str = "router-test-boundary-7d1c";

// ---- real image bytes, padded to an exact size ----

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFF_u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 12);
    out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc_input = kind.to_vec();
    crc_input.extend_from_slice(data);
    out.extend_from_slice(&crc32(&crc_input).to_be_bytes());
    out
}

/// A valid 1×1 grayscale PNG (67 bytes).
fn png_1x1() -> Vec<u8> {
    hex(
        "89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b550000000a49444154789c636000000002000148afa4710000000049454e44ae426082",
    )
}

/// A PNG of exactly `total` bytes (≥ 79): a private ancillary chunk pads it.
pub fn png(total: usize) -> Vec<u8> {
    let base = png_1x1();
    let pad = total - base.len() - 12;
    let mut out = base[..33].to_vec(); // signature + IHDR
    out.extend(png_chunk(b"ruSt", &vec![0x5a; pad]));
    out.extend_from_slice(&base[33..]);
    assert_eq!(out.len(), total);
    out
}

/// A PNG whose header claims `side`×`side` pixels (a decompression bomb).
fn png_claiming(side: u32) -> Vec<u8> {
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let base = png_1x1();
    let mut out = base[..8].to_vec();
    out.extend(png_chunk(b"IHDR", &ihdr));
    out.extend_from_slice(&base[33..]);
    out
}

/// A 1×1 JPEG (125 bytes, arithmetic coded).
fn jpeg_1x1() -> Vec<u8> {
    hex(
        "ffd8ffdb004300030202020202030202020303030304060404040404080606050609080a0a090809090a0c0f0c0a0b0e0b09090d110d0e0f101011100a0c12131210130f101010ffc9000b080001000101011100ffcc000600101005ffda0008010100003f00d2cf20ffd9",
    )
}

/// A JPEG of exactly `total` bytes: comment segments before the scan.
fn jpeg(total: usize) -> Vec<u8> {
    let base = jpeg_1x1();
    let sos = base.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let mut pad = total - base.len();
    let mut out = base[..sos].to_vec();
    while pad > 0 {
        // A segment costs 4 + data bytes; never leave less than 4.
        let mut take = pad.min(4 + 65_533);
        if pad - take > 0 && pad - take < 4 {
            take -= 4;
        }
        let data = take - 4;
        out.extend_from_slice(&[0xFF, 0xFE]);
        out.extend_from_slice(&u16::try_from(data + 2).unwrap().to_be_bytes());
        out.extend(std::iter::repeat_n(b'j', data));
        pad -= take;
    }
    out.extend_from_slice(&base[sos..]);
    assert_eq!(out.len(), total);
    out
}

fn gif_1x1() -> Vec<u8> {
    hex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")
}

fn webp_1x1() -> Vec<u8> {
    hex("524946461a000000574542505650384c0d0000002f00000010071011118888fe0700")
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

// ---- multipart bodies ----

/// One part: name, optional file name and type, bytes.
struct Part<'a> {
    name: &'a str,
    filename: Option<&'a str>,
    content_type: Option<&'a str>,
    data: &'a [u8],
}

fn file_part<'a>(content_type: &'a str, data: &'a [u8]) -> Part<'a> {
    Part {
        name: "file",
        filename: Some("holiday photo.png"),
        content_type: Some(content_type),
        data,
    }
}

fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(filename) = part.filename {
            disposition.push_str(&format!("; filename=\"{filename}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(ct) = part.content_type {
            body.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(part.data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

async fn post_body(
    r: &TestRouter,
    key: &str,
    content_type: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    r.client
        .post(format!("{}/v1/uploads", r.base))
        .bearer_auth(key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

fn form_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

pub async fn upload(
    r: &TestRouter,
    key: &str,
    content_type: &str,
    data: &[u8],
) -> reqwest::Response {
    post_body(
        r,
        key,
        &form_type(),
        multipart(&[file_part(content_type, data)]),
    )
    .await
}

/// Uploads a small PNG; asserts 201; returns the record.
pub async fn upload_png(r: &TestRouter, key: &str) -> Value {
    let resp = upload(r, key, "image/png", &png_1x1()).await;
    assert_eq!(resp.status(), 201);
    resp.json().await.unwrap()
}

async fn delete(r: &TestRouter, key: &str, id: &str) -> reqwest::Response {
    r.call(reqwest::Method::DELETE, &format!("/v1/uploads/{id}"), key)
        .await
}

/// Files under the router's object store folder.
fn stored_files(r: &TestRouter) -> Vec<std::path::PathBuf> {
    let location = r.uploads.storage.as_ref().unwrap().location();
    files_under(std::path::Path::new(
        location.strip_prefix("file://").unwrap(),
    ))
}

/// Every file under `dir`, recursively (none when it is missing).
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

// ---- tests ----

#[tokio::test(flavor = "multi_thread")]
async fn each_image_type_is_stored_under_a_random_key_without_supplier_or_charge() {
    // I-01, I-09, I-12, I-14, GP-01, CF-24.
    let (r, c) = TestRouter::start_rich().await;
    let before = r.account(&c.account_id).await;
    for (mime, data) in [
        ("image/png", png_1x1()),
        ("image/jpeg", jpeg_1x1()),
        ("image/gif", gif_1x1()),
        ("image/webp", webp_1x1()),
    ] {
        let resp = upload(&r, &c.key, mime, &data).await;
        assert!(resp.headers().contains_key("x-request-id"));
        assert_eq!(resp.status(), 201, "{mime}");
        let body: Value = resp.json().await.unwrap();
        let id = body["id"].as_str().unwrap();
        assert!(id.starts_with("upl_") && id.len() == 36, "{body}");
        assert_eq!(body["object"], "upload");
        assert_eq!(body["bytes"], data.len());
        assert_eq!(body["mime_type"], mime);
        assert_eq!(body["filename"], "holiday photo.png");
        let created = body["created_at"].as_i64().unwrap();
        assert_eq!(body["expires_at"].as_i64().unwrap() - created, 3600);
    }
    let files = stored_files(&r);
    assert_eq!(files.len(), 4);
    for file in &files {
        let name = file.to_string_lossy();
        assert!(
            !name.contains("holiday") && !name.contains("upl_"),
            "{name}"
        );
    }
    assert_eq!(r.mock.call_count(), 0);
    let after = r.account(&c.account_id).await;
    assert_eq!(before["balance_nano"], after["balance_nano"]);
    assert_eq!(before["held_nano"], after["held_nano"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn size_and_envelope_boundaries() {
    // I-06, I-07, I-08, Q-06, Q-07: exactly 10 MiB is accepted; one more
    // byte, an empty file and an envelope one byte over are 413.
    let (r, c) = TestRouter::start_rich().await;
    let resp = upload(&r, &c.key, "image/png", &png(MAX_FILE)).await;
    assert_eq!(resp.status(), 201);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["bytes"], MAX_FILE);
    let resp = upload(&r, &c.key, "image/jpeg", &jpeg(MAX_FILE)).await;
    assert_eq!(resp.status(), 201);
    expect_error(
        upload(&r, &c.key, "image/png", &png(MAX_FILE + 1)).await,
        413,
        "upload_too_large",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/png", &[]).await,
        413,
        "upload_too_large",
    )
    .await;

    // The envelope: a body of exactly 10 MiB + 64 KiB + 1 bytes.
    let empty_envelope = multipart(&[file_part("image/png", &[])]).len();
    let file = png(MAX_ENVELOPE + 1 - empty_envelope);
    let body = multipart(&[file_part("image/png", &file)]);
    assert_eq!(body.len(), MAX_ENVELOPE + 1);
    expect_error(
        post_body(&r, &c.key, &form_type(), body).await,
        413,
        "upload_too_large",
    )
    .await;
    // The same without Content-Length (chunked): counted as it arrives.
    let file = png(MAX_ENVELOPE + 1 - empty_envelope);
    let body = multipart(&[file_part("image/png", &file)]);
    let stream = futures::stream::iter(
        body.chunks(64 * 1024)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let resp = r
        .client
        .post(format!("{}/v1/uploads", r.base))
        .bearer_auth(&c.key)
        .header("content-type", form_type())
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    expect_error(resp, 413, "upload_too_large").await;
    assert_eq!(stored_files(&r).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_body_must_be_one_part_named_file() {
    // I-02..I-05, GP-40.
    let (r, c) = TestRouter::start_rich().await;
    let image = png_1x1();
    let json_body = serde_json::to_vec(&json!({"file": "x"})).unwrap();
    expect_error(
        post_body(&r, &c.key, "application/json", json_body).await,
        400,
        "invalid_upload",
    )
    .await;
    let only_foo = multipart(&[Part {
        name: "foo",
        filename: None,
        content_type: None,
        data: b"bar",
    }]);
    expect_error(
        post_body(&r, &c.key, &form_type(), only_foo).await,
        400,
        "invalid_upload",
    )
    .await;
    let two_files = multipart(&[
        file_part("image/png", &image),
        file_part("image/png", &image),
    ]);
    expect_error(
        post_body(&r, &c.key, &form_type(), two_files).await,
        400,
        "invalid_upload",
    )
    .await;
    let extra = multipart(&[
        file_part("image/png", &image),
        Part {
            name: "purpose",
            filename: None,
            content_type: None,
            data: b"vision",
        },
    ]);
    expect_error(
        post_body(&r, &c.key, &form_type(), extra).await,
        400,
        "invalid_upload",
    )
    .await;
    let good = multipart(&[file_part("image/png", &image)]);
    let wrong_boundary = "multipart/form-data; boundary=not-the-one";
    expect_error(
        post_body(&r, &c.key, wrong_boundary, good.clone()).await,
        400,
        "invalid_upload",
    )
    .await;
    let truncated = good[..good.len() - 20].to_vec();
    expect_error(
        post_body(&r, &c.key, &form_type(), truncated).await,
        400,
        "invalid_upload",
    )
    .await;
    // The shape answers before the size: two files, one of them empty.
    let shape_first = multipart(&[file_part("image/png", &[]), file_part("image/png", &image)]);
    expect_error(
        post_body(&r, &c.key, &form_type(), shape_first).await,
        400,
        "invalid_upload",
    )
    .await;
    assert!(stored_files(&r).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_four_types_whose_declared_type_matches_their_content() {
    // I-09..I-11, GP-40: size is checked before type; polyglots and bombs refused.
    let (r, c) = TestRouter::start_rich().await;
    let pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n".to_vec();
    expect_error(
        upload(&r, &c.key, "application/pdf", &pdf).await,
        415,
        "unsupported_file_type",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/png", &pdf).await,
        415,
        "unsupported_file_type",
    )
    .await;
    let bmp = hex(
        "424d3a0000000000000036000000280000000100000001000000010018000000000004000000130b0000130b00000000000000000000ff00ff00",
    );
    expect_error(
        upload(&r, &c.key, "image/bmp", &bmp).await,
        415,
        "unsupported_file_type",
    )
    .await;
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec();
    expect_error(
        upload(&r, &c.key, "image/svg+xml", &svg).await,
        415,
        "unsupported_file_type",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/png", &jpeg_1x1()).await,
        415,
        "invalid_content_type",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/jpeg", &png_1x1()).await,
        415,
        "invalid_content_type",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/gif", &webp_1x1()).await,
        415,
        "invalid_content_type",
    )
    .await;
    // A polyglot: a whole PNG with a ZIP archive appended.
    let mut polyglot = png_1x1();
    polyglot.extend_from_slice(b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
    expect_error(
        upload(&r, &c.key, "image/png", &polyglot).await,
        415,
        "unsupported_file_type",
    )
    .await;
    // A header claiming 65535×65535 pixels: refused from the header alone.
    expect_error(
        upload(&r, &c.key, "image/png", &png_claiming(65_535)).await,
        415,
        "unsupported_file_type",
    )
    .await;
    // Empty with a wrong type: size first (413).
    expect_error(
        upload(&r, &c.key, "application/pdf", &[]).await,
        413,
        "upload_too_large",
    )
    .await;
    assert!(stored_files(&r).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_object_quota_holds_under_concurrency_and_counts_queued_deletions() {
    // I-15, I-17: 31 retained + 5 parallel → exactly one 201; at 32, a
    // deletion not yet purged still counts.
    let (r, c) = TestRouter::start_rich().await;
    let mut ids = Vec::new();
    for _ in 0..31 {
        // Backdate the rate so only the quota is in play.
        ids.push(
            upload_png(&r, &c.key).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        age_uploads(&r, &c.account_id).await;
    }
    let image = png_1x1();
    let replies = join_all((0..5).map(|_| upload(&r, &c.key, "image/png", &image))).await;
    let mut created = 0;
    for resp in replies {
        match resp.status().as_u16() {
            201 => created += 1,
            _ => {
                expect_error(resp, 429, "upload_quota_exceeded").await;
            }
        }
    }
    assert_eq!(created, 1);
    age_uploads(&r, &c.account_id).await;
    assert_eq!(delete(&r, &c.key, &ids[0]).await.status(), 204);
    expect_error(
        upload(&r, &c.key, "image/png", &png_1x1()).await,
        429,
        "upload_quota_exceeded",
    )
    .await;
    // Once purged, the slot is free again.
    assert_eq!(r.run_job("upload-purge").await, 1);
    assert_eq!(
        upload(&r, &c.key, "image/png", &png_1x1()).await.status(),
        201
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_byte_quota_is_64_mib() {
    // I-16: 6 × 10 MiB + 4 MiB = 64 MiB accepted; one more byte is 429.
    let (r, c) = TestRouter::start_rich().await;
    for _ in 0..6 {
        assert_eq!(
            upload(&r, &c.key, "image/png", &png(MAX_FILE))
                .await
                .status(),
            201
        );
    }
    assert_eq!(
        upload(&r, &c.key, "image/png", &png(4 * MIB))
            .await
            .status(),
        201
    );
    expect_error(
        upload(&r, &c.key, "image/png", &png(80)).await,
        429,
        "upload_quota_exceeded",
    )
    .await;
}

/// Moves the account's uploads two days back, so the rate windows are
/// empty (the quota is untouched).
async fn age_uploads(r: &TestRouter, account_id: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.connection().await.unwrap();
    diesel::sql_query(
        "UPDATE uploads SET created_at = created_at - interval '2 days' WHERE account_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(account_id.parse::<uuid::Uuid>().unwrap())
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_a_minute_and_deleting_does_not_reset_the_rate() {
    // I-18, I-21, GP-39: 20 uploads and 20 deletes; the 21st is 429 with Retry-After.
    let (r, c) = TestRouter::start_rich().await;
    for _ in 0..20 {
        let id = upload_png(&r, &c.key).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(delete(&r, &c.key, &id).await.status(), 204);
    }
    r.run_job("upload-purge").await;
    let resp = upload(&r, &c.key, "image/png", &png_1x1()).await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    expect_error(resp, 429, "upload_rate_limit").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn forty_parallel_uploads_admit_exactly_twenty() {
    // RELIABILITY A6, I-18, with all forty in progress at once allowed
    // (the default cap is 4). Files in progress count toward the 32-file
    // quota (issue 33): when more than 32 happen to be in progress at
    // once, the rest are 429 upload_quota_exceeded instead of
    // upload_rate_limit. Either way exactly 20 are admitted.
    let r = TestRouter::start_uploads(UploadSettings {
        concurrency_per_account: 40,
        ..test_uploads()
    })
    .await;
    let c = r.rich_customer().await;
    let image = png_1x1();
    let replies = join_all((0..40).map(|_| upload(&r, &c.key, "image/png", &image))).await;
    let (mut created, mut limited) = (0, 0);
    for resp in replies {
        match resp.status().as_u16() {
            201 => created += 1,
            429 => {
                let retry_after = resp.headers().contains_key("retry-after");
                let body: Value = resp.json().await.unwrap();
                match code(&body) {
                    "upload_rate_limit" => assert!(retry_after),
                    "upload_quota_exceeded" => {}
                    _ => panic!("unexpected {body}"),
                }
                limited += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((created, limited), (20, 20));
    assert_eq!(stored_files(&r).len(), 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_and_twenty_a_day() {
    // I-19: the 121st admitted upload of the UTC day is 429.
    let (r, c) = TestRouter::start_rich().await;
    // 120 uploads admitted earlier today (tombstones of failed writes, so
    // they count toward the rate and not the quota).
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.connection().await.unwrap();
    diesel::sql_query(
        "INSERT INTO uploads (id, account_id, object_key, bytes, mime_type, width, height, status,
                              created_at, expires_at, removed_at)
         SELECT gen_random_uuid(), $1, 'uploads/seed-' || g, 1, 'image/png', 1, 1, 'failed',
                greatest(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
                         now() - interval '2 minutes'),
                now() + interval '1 hour', now()
         FROM generate_series(1, 120) AS g",
    )
    .bind::<diesel::sql_types::Uuid, _>(c.account_id.parse::<uuid::Uuid>().unwrap())
    .execute(&mut conn)
    .await
    .unwrap();
    let resp = upload(&r, &c.key, "image/png", &png_1x1()).await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&retry), "{retry}");
    expect_error(resp, 429, "upload_rate_limit").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_object_store_is_503_and_still_counts_toward_the_rate() {
    // I-20, I-22: the storage failure was admitted (rate) but holds no quota.
    let r = TestRouter::start_uploads(UploadSettings::default()).await;
    let c = r.rich_customer().await;
    for _ in 0..20 {
        expect_error(
            upload(&r, &c.key, "image/png", &png_1x1()).await,
            503,
            "uploads_unavailable",
        )
        .await;
    }
    expect_error(
        upload(&r, &c.key, "image/png", &png_1x1()).await,
        429,
        "upload_rate_limit",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_store_leaves_nothing_counted_against_the_quota() {
    // I-22: the store's folder is replaced by a file, so every write fails.
    let dir = std::env::temp_dir()
        .join("router-test-uploads")
        .join(uuid::Uuid::new_v4().simple().to_string());
    let settings = UploadSettings {
        storage: Some(
            router_uploads::ObjectStorage::from_url(&format!("file://{}", dir.display())).unwrap(),
        ),
        ..UploadSettings::default()
    };
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"not a folder").unwrap();
    let r = TestRouter::start_uploads(settings).await;
    let c = r.rich_customer().await;
    expect_error(
        upload(&r, &c.key, "image/png", &png(3 * MIB)).await,
        503,
        "uploads_unavailable",
    )
    .await;
    expect_error(
        upload(&r, &c.key, "image/png", &png_1x1()).await,
        503,
        "uploads_unavailable",
    )
    .await;
    let held = count(
        &r,
        "SELECT count(*) AS n FROM uploads WHERE status IN ('writing', 'retained', 'deleting')",
    )
    .await;
    assert_eq!(held, 0);
    let failed = count(
        &r,
        "SELECT count(*) AS n FROM uploads WHERE status = 'failed'",
    )
    .await;
    assert_eq!(failed, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_is_204_once_and_every_other_id_is_the_same_404() {
    // I-24, I-25, GP-12, A-22.
    let (r, c) = TestRouter::start_rich().await;
    let other = r.rich_customer().await;
    let id = upload_png(&r, &c.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let foreign = upload_png(&r, &other.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let resp = delete(&r, &other.key, &id).await;
    let foreign_body = expect_error(resp, 404, "upload_not_found").await;
    let resp = delete(&r, &c.key, &id).await;
    assert_eq!(resp.status(), 204);
    assert!(resp.headers().contains_key("x-request-id"));
    assert_eq!(resp.bytes().await.unwrap().len(), 0);
    for probe in [
        id.clone(),
        foreign,
        format!("upl_{}", uuid::Uuid::new_v4().simple()),
        "not-an-id".to_owned(),
        "upl_..%2f".to_owned(),
        "x".repeat(10_000),
    ] {
        let body = expect_error(delete(&r, &c.key, &probe).await, 404, "upload_not_found").await;
        assert_eq!(body["error"]["message"], foreign_body["error"]["message"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_and_purge_run_as_jobs_and_tombstones_keep_counting() {
    // I-14, I-26, I-27, GP-41, CF-23: with a 1 s TTL the upload is 404 after
    // it; the expiry job schedules it, the purge removes the object, and
    // the tombstone goes only after its keep.
    let r = TestRouter::start_uploads(UploadSettings {
        ttl: Duration::from_secs(1),
        tombstone: Duration::from_secs(1),
        ..test_uploads()
    })
    .await;
    let c = r.rich_customer().await;
    let record = upload_png(&r, &c.key).await;
    assert_eq!(
        record["expires_at"].as_i64().unwrap() - record["created_at"].as_i64().unwrap(),
        1
    );
    let id = record["id"].as_str().unwrap().to_owned();
    assert_eq!(stored_files(&r).len(), 1);
    // Past the expiry (a bounded wait on the database clock).
    wait_past(&r, "expires_at", &id).await;
    expect_error(delete(&r, &c.key, &id).await, 404, "upload_not_found").await;
    assert_eq!(r.run_job("upload-expiry").await, 1);
    assert_eq!(r.run_job("upload-expiry").await, 0);
    assert!(r.run_job("upload-purge").await >= 1);
    assert!(stored_files(&r).is_empty());
    wait_past(&r, "removed_at + interval '1 second'", &id).await;
    r.run_job("upload-purge").await;
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.connection().await.unwrap();
    let left = diesel::sql_query("SELECT 1 FROM uploads")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0, "the tombstone is dropped after its keep");
}

/// Waits (bounded) until the database clock is past `column` of the upload.
async fn wait_past(r: &TestRouter, column: &str, public_id: &str) {
    use diesel_async::RunQueryDsl;
    let id: uuid::Uuid = public_id.trim_start_matches("upl_").parse().unwrap();
    let mut conn = r.db.connection().await.unwrap();
    for _ in 0..100 {
        let past = diesel::sql_query(format!(
            "SELECT 1 FROM uploads WHERE id = $1 AND {column} < now()"
        ))
        .bind::<diesel::sql_types::Uuid, _>(id)
        .execute(&mut conn)
        .await
        .unwrap();
        if past == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{column} never passed");
}

#[tokio::test(flavor = "multi_thread")]
async fn zero_data_retention_refuses_uploads_and_schedules_the_existing_ones() {
    // I-13, I-28, J-07, J-08, J-12, CF-16, GP-37.
    let (r, c) = TestRouter::start_rich().await;
    let old = upload_png(&r, &c.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cookie = r.session_cookie(&c.account_id).await;
    crate::data_protection::set_zdr(&r, &cookie, true).await;
    expect_error(
        upload(&r, &c.key, "image/png", &png_1x1()).await,
        403,
        "data_protection_restriction",
    )
    .await;
    // DELETE is allowed, but the upload was scheduled: 404, not 403.
    expect_error(delete(&r, &c.key, &old).await, 404, "upload_not_found").await;
    assert_eq!(r.run_job("upload-purge").await, 1);
    assert!(stored_files(&r).is_empty());
    crate::data_protection::set_zdr(&r, &cookie, false).await;
    assert_eq!(
        upload(&r, &c.key, "image/png", &png_1x1()).await.status(),
        201
    );
    expect_error(delete(&r, &c.key, &old).await, 404, "upload_not_found").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_same_origin_session_may_upload_and_another_origin_may_not() {
    // I-23, A-15, A-16.
    let (r, c) = TestRouter::start_rich().await;
    let cookie = r.session_cookie(&c.account_id).await;
    let send = |origin: String| {
        r.client
            .post(format!("{}/v1/uploads", r.base))
            .header("cookie", &cookie)
            .header("origin", origin)
            .header("content-type", form_type())
            .body(multipart(&[file_part("image/png", &png_1x1())]))
            .send()
    };
    let resp = send(r.base.clone()).await.unwrap();
    assert_eq!(resp.status(), 201);
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    expect_error(
        send("https://evil.example".to_owned()).await.unwrap(),
        403,
        "cross_origin_forbidden",
    )
    .await;
    let resp = r
        .client
        .delete(format!("{}/v1/uploads/{id}", r.base))
        .header("cookie", &cookie)
        .header("origin", &r.base)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
}

fn chat_with(model: &str, image: Value) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"}, image]}]})
}

fn responses_with(model: &str, image: Value) -> Value {
    json!({"model": model, "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "What is in this image?"}, image]}]})
}

fn messages_with(model: &str, image: Value) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this image?"}, image]}]})
}

/// The three surfaces' requests referencing upload `id`.
fn references(model: &str, id: &str) -> [(&'static str, Value); 3] {
    [
        (
            "/v1/chat/completions",
            chat_with(model, json!({"type": "input_image", "file_id": id})),
        ),
        (
            "/v1/responses",
            responses_with(model, json!({"type": "input_image", "file_id": id})),
        ),
        (
            "/v1/messages",
            messages_with(
                model,
                json!({"type": "image", "source": {"type": "file", "file_id": id}}),
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_reference_reaches_every_supplier_dialect_as_its_bytes() {
    // H-02, GP-02: each surface × each route dialect; the supplier gets the
    // image's base64, never our id.
    use base64::Engine as _;
    let (r, c) = TestRouter::start_rich().await;
    let image = png(200);
    let resp = upload(&r, &c.key, "image/png", &image).await;
    assert_eq!(resp.status(), 201);
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let data = base64::engine::general_purpose::STANDARD.encode(&image);
    for model in ["m-via-chat", "m-via-messages", "m-via-responses"] {
        for (path, body) in references(model, &id) {
            let before = r.mock.call_count();
            let resp = if path == "/v1/messages" {
                r.messages(&c.key, &body).await
            } else {
                r.post(path, &c.key, &body).await
            };
            assert_eq!(
                resp.status(),
                200,
                "{path} via {model}: {}",
                resp.text().await.unwrap()
            );
            let calls = r.mock.calls();
            assert_eq!(calls.len(), before + 1);
            let sent = calls.last().unwrap().body.to_string();
            assert!(sent.contains(&data), "{path} via {model}: {sent}");
            assert!(sent.contains("image/png"), "{path} via {model}: {sent}");
            assert!(!sent.contains(&id), "{path} via {model} leaked the id");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_references_are_one_400_before_any_supplier_call() {
    // H-03, H-14, I-27, GP-42: unknown, foreign, deleted and expired all
    // answer the same 400 naming the part; with ZDR on, 503 first (H-13).
    let r = TestRouter::start_uploads(UploadSettings {
        ttl: Duration::from_secs(2),
        ..test_uploads()
    })
    .await;
    let c = r.rich_customer().await;
    let other = r.rich_customer().await;
    let foreign = upload_png(&r, &other.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let deleted = upload_png(&r, &c.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(delete(&r, &c.key, &deleted).await.status(), 204);
    let expired = upload_png(&r, &c.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_past(&r, "expires_at", &expired).await;
    let unknown = format!("upl_{}", uuid::Uuid::new_v4().simple());
    let mut messages = Vec::new();
    for id in [
        &foreign,
        &deleted,
        &expired,
        &unknown,
        &"file-abc".to_owned(),
    ] {
        let body = chat_with("m-via-chat", json!({"type": "input_image", "file_id": id}));
        let error = expect_error(r.chat(&c.key, &body).await, 400, "invalid_parameter").await;
        assert_eq!(error["error"]["param"], "messages[0].content[1].file_id");
        messages.push(error["error"]["message"].clone());
        // The path in the surface's own terms (Responses: `input`).
        let body = json!({"model": "m-via-chat", "input": [
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "file_id": id}]}]});
        let error = expect_error(
            r.post("/v1/responses", &c.key, &body).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(error["error"]["param"], "input[0].content[1].file_id");
        messages.push(error["error"]["message"].clone());
        let body = messages_with(
            "m-via-messages",
            json!({"type": "image", "source": {"type": "file", "file_id": id}}),
        );
        expect_messages_error(
            r.messages(&c.key, &body).await,
            400,
            "invalid_request_error",
        )
        .await;
    }
    messages.dedup();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(r.mock.call_count(), 0);

    let live = upload_png(&r, &c.key).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cookie = r.session_cookie(&c.account_id).await;
    crate::data_protection::set_zdr(&r, &cookie, true).await;
    let body = chat_with(
        "m-via-chat",
        json!({"type": "input_image", "file_id": live}),
    );
    expect_error(r.chat(&c.key, &body).await, 503, "zdr_capacity_unavailable").await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_conservative_image_input_bound_refuses_before_any_supplier_call() {
    // H-07, Q-12, GP-69: text at a token per 4 bytes plus the image's worst
    // case (a URL: the largest any image costs); above 272,000 is 400.
    let (r, c) = TestRouter::start_rich().await;
    let with_text = |chars: usize| {
        json!({"model": "m-via-chat", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "a".repeat(chars)},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]})
    };
    // 4 × (272,000 − 1,600) − 8 bytes of framing: exactly at the bound.
    let at_bound = 4 * (272_000 - 1_600) - 8;
    expect_error(
        r.chat(&c.key, &with_text(at_bound + 1)).await,
        400,
        "image_input_limit",
    )
    .await;
    assert_eq!(r.mock.call_count(), 0);
    let resp = r.chat(&c.key, &with_text(at_bound)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(r.mock.call_count(), 1);
    // The same text without an image is not bound by it.
    let text_only = json!({"model": "m-via-chat", "messages": [{"role": "user", "content": "a".repeat(at_bound + 100)}]});
    assert_eq!(r.chat(&c.key, &text_only).await.status(), 200);
}

/// A folder store whose first multipart write fails at part `fail_at`
/// (counted from 0), as a network store that drops mid-upload does; it
/// records whether the router aborted that write. Later writes succeed.
#[derive(Debug)]
struct FailingMidWrite {
    inner: object_store::local::LocalFileSystem,
    fail_at: usize,
    failed_once: std::sync::atomic::AtomicBool,
    aborted: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Display for FailingMidWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FailingMidWrite({})", self.inner)
    }
}

#[derive(Debug)]
struct FailingUpload {
    inner: Box<dyn object_store::MultipartUpload>,
    parts: usize,
    fail_at: usize,
    aborted: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait::async_trait]
impl object_store::MultipartUpload for FailingUpload {
    fn put_part(&mut self, data: object_store::PutPayload) -> object_store::UploadPart {
        let n = self.parts;
        self.parts += 1;
        if n >= self.fail_at {
            return Box::pin(async {
                Err(object_store::Error::Generic {
                    store: "failing",
                    source: "connection reset mid-write".into(),
                })
            });
        }
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> object_store::Result<object_store::PutResult> {
        self.inner.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.aborted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.abort().await
    }
}

#[async_trait::async_trait]
impl object_store::ObjectStore for FailingMidWrite {
    async fn put_opts(
        &self,
        location: &object_store::path::Path,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &object_store::path::Path,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        if self
            .failed_once
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Ok(inner);
        }
        Ok(Box::new(FailingUpload {
            inner,
            parts: 0,
            fail_at: self.fail_at,
            aborted: self.aborted.clone(),
        }))
    }

    async fn get_opts(
        &self,
        location: &object_store::path::Path,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<
            'static,
            object_store::Result<object_store::path::Path>,
        >,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::path::Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&object_store::path::Path>,
    ) -> object_store::Result<object_store::ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &object_store::path::Path,
        to: &object_store::path::Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_failing_mid_write_leaves_no_orphan_and_no_quota_used() {
    // I-22, issue 18: the store accepts the first parts of a multipart
    // write, then fails. The write is aborted (no partial object left in
    // the store), the upload is 503 and marked failed, and nothing of it
    // counts against the quota: the account can still store its full
    // 64 MiB.
    let dir = std::env::temp_dir()
        .join("router-test-uploads")
        .join(uuid::Uuid::new_v4().simple().to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let aborted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let store = FailingMidWrite {
        inner: object_store::local::LocalFileSystem::new_with_prefix(&dir).unwrap(),
        fail_at: 3,
        failed_once: std::sync::atomic::AtomicBool::new(false),
        aborted: aborted.clone(),
    };
    let settings = UploadSettings {
        storage: Some(router_uploads::ObjectStorage::from_store(
            std::sync::Arc::new(store),
            256 * 1024,
            "failing mid-write",
        )),
        ..UploadSettings::default()
    };
    let r = TestRouter::start_uploads(settings).await;
    let c = r.rich_customer().await;
    // 10 MiB in 256 KiB parts: parts 0..2 are written, part 3 fails.
    expect_error(
        upload(&r, &c.key, "image/png", &png(MAX_FILE)).await,
        503,
        "uploads_unavailable",
    )
    .await;
    assert!(
        aborted.load(std::sync::atomic::Ordering::SeqCst),
        "the multipart write was aborted"
    );
    assert_eq!(files_under(&dir), Vec::<std::path::PathBuf>::new());

    let statuses: Vec<String> = {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            status: String,
        }
        let mut conn = r.db.connection().await.unwrap();
        let rows: Vec<Row> = diesel::sql_query("SELECT status FROM uploads")
            .load(&mut conn)
            .await
            .unwrap();
        rows.into_iter().map(|r| r.status).collect()
    };
    assert_eq!(statuses, ["failed"]);
    // The whole byte quota is still free: 6 × 10 MiB + 4 MiB = 64 MiB.
    for size in [MAX_FILE; 6].into_iter().chain([4 * MIB]) {
        let resp = upload(&r, &c.key, "image/png", &png(size)).await;
        assert_eq!(resp.status(), 201);
    }
    expect_error(
        upload(&r, &c.key, "image/png", &png_1x1()).await,
        429,
        "upload_quota_exceeded",
    )
    .await;
}

// ---- uploads in progress (issue 33) ----

/// An upload sent by hand on a connection of its own, so a test can stop
/// mid-body and keep it open, or drop it.
struct HeldUpload {
    stream: tokio::net::TcpStream,
    body: Vec<u8>,
    sent: usize,
    chunked: bool,
}

impl HeldUpload {
    /// Sends the head (with `Content-Length`, or chunked without one) and
    /// the first `first` bytes of `body`.
    async fn open(
        r: &TestRouter,
        key: &str,
        body: Vec<u8>,
        first: usize,
        chunked: bool,
    ) -> HeldUpload {
        use tokio::io::AsyncWriteExt;
        let host = r.base.strip_prefix("http://").unwrap();
        let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
        let length = if chunked {
            "Transfer-Encoding: chunked".to_owned()
        } else {
            format!("Content-Length: {}", body.len())
        };
        let head = format!(
            "POST /v1/uploads HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\
             Content-Type: {}\r\n{length}\r\n\r\n",
            form_type()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut held = HeldUpload {
            stream,
            body,
            sent: 0,
            chunked,
        };
        held.send(first).await;
        held
    }

    /// Sends the next `n` bytes of the body (fewer when it ends sooner).
    async fn send(&mut self, n: usize) {
        use tokio::io::AsyncWriteExt;
        let end = (self.sent + n).min(self.body.len());
        if end == self.sent {
            return;
        }
        let piece = &self.body[self.sent..end];
        if self.chunked {
            let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
            framed.extend_from_slice(piece);
            framed.extend_from_slice(b"\r\n");
            self.stream.write_all(&framed).await.unwrap();
        } else {
            self.stream.write_all(piece).await.unwrap();
        }
        self.sent = end;
    }

    /// Sends the rest of the body and reads the answer.
    async fn finish(mut self) -> (u16, Option<String>, Value) {
        use tokio::io::AsyncWriteExt;
        self.send(self.body.len()).await;
        if self.chunked {
            self.stream.write_all(b"0\r\n\r\n").await.unwrap();
        }
        self.answer().await
    }

    /// The answer: status, `Retry-After`, and the JSON body.
    async fn answer(mut self) -> (u16, Option<String>, Value) {
        use tokio::io::AsyncReadExt;
        let read = async {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let end = loop {
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the connection closed before an answer");
                buf.extend_from_slice(&chunk[..n]);
            };
            let head = String::from_utf8(buf[..end].to_vec()).unwrap();
            let status: u16 = head[9..12].parse().unwrap();
            let header = |name: &str| {
                head.lines().find_map(|line| {
                    let (n, v) = line.split_once(':')?;
                    n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                })
            };
            let length: usize = header("content-length").unwrap().parse().unwrap();
            while buf.len() < end + length {
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the connection closed mid-answer");
                buf.extend_from_slice(&chunk[..n]);
            }
            let body: Value = serde_json::from_slice(&buf[end..end + length]).unwrap();
            (status, header("retry-after"), body)
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("no answer within 10 s (the router waits for the body)")
    }
}

/// The error code of an answer.
fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// The router's spool folder (inside its folder store).
fn spool_dir(r: &TestRouter) -> std::path::PathBuf {
    r.uploads.storage.as_ref().unwrap().spool_dir().unwrap()
}

/// Bytes in the spool folder.
fn spooled_bytes(r: &TestRouter) -> u64 {
    files_under(&spool_dir(r))
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Waits until `done` holds (at most 10 s).
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 10 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn uuid_of(account_id: &str) -> uuid::Uuid {
    account_id.parse().unwrap()
}

/// Retained uploads worth `bytes`, admitted two days ago (outside the rate
/// windows), with no object behind them: only the quota sees them.
async fn seed_retained(r: &TestRouter, account_id: &str, files: i64, bytes: i64) {
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.connection().await.unwrap();
    diesel::sql_query(
        "INSERT INTO uploads (id, account_id, object_key, bytes, mime_type, width, height, status,
                              created_at, expires_at)
         SELECT gen_random_uuid(), $1, 'uploads/seed-' || g,
                $3 / $2 + CASE WHEN g = 1 THEN $3 % $2 ELSE 0 END,
                'image/png', 1, 1, 'retained', now() - interval '2 days', now() + interval '1 hour'
         FROM generate_series(1, $2) AS g",
    )
    .bind::<diesel::sql_types::Uuid, _>(uuid_of(account_id))
    .bind::<diesel::sql_types::BigInt, _>(files)
    .bind::<diesel::sql_types::BigInt, _>(bytes)
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn uploads_in_progress_reserve_the_quota_before_their_bodies_are_read() {
    // Issue 33: 58 MiB retained, 6 MiB left. A 4 MiB upload held open
    // mid-body reserves its size; another 4 MiB one is 429 before a byte
    // of its body is sent; one of unknown length gets what is left and
    // its spool stops there; dropping the held one gives its room back.
    let (r, c) = TestRouter::start_rich().await;
    let account = uuid_of(&c.account_id);
    seed_retained(&r, &c.account_id, 6, 58 * MIB as i64).await;

    let four = multipart(&[file_part("image/png", &png(4 * MIB))]);
    let held = HeldUpload::open(&r, &c.key, four.clone(), MIB, false).await;
    wait_until("the held upload to spool", || spooled_bytes(&r) > 0).await;
    assert_eq!(
        r.app.uploads.in_flight.usage(account),
        (1, four.len() as u64)
    );

    let refused = HeldUpload::open(&r, &c.key, four.clone(), 0, false).await;
    let (status, _, body) = refused.answer().await;
    assert_eq!(
        (status, code(&body)),
        (429, "upload_quota_exceeded"),
        "{body}"
    );

    // Unknown length: it reserves the rest (6 MiB less the held body) and
    // keeps no more, though all 3 MiB of its file are sent.
    let room = 6 * MIB as u64 - four.len() as u64;
    let three = multipart(&[file_part("image/png", &png(3 * MIB))]);
    let all_but_the_end = three.len() - 64;
    let chunked = HeldUpload::open(&r, &c.key, three, all_but_the_end, true).await;
    wait_until("the chunked upload to reserve and spool", || {
        r.app.uploads.in_flight.usage(account).1 == four.len() as u64 + room
            && spooled_bytes(&r) >= room
    })
    .await;
    // Let it read on: nothing past the reservations reaches the disk (the
    // held upload sent 1 MiB).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spooled = spooled_bytes(&r);
    assert!(
        spooled <= MIB as u64 + room,
        "{spooled} spooled, room {room}"
    );
    assert!(spooled <= r.app.uploads.in_flight.usage(account).1);
    let (status, _, body) = chunked.finish().await;
    assert_eq!(
        (status, code(&body)),
        (429, "upload_quota_exceeded"),
        "{body}"
    );

    // The held upload's client goes away: its reservation and spool go too.
    drop(held);
    wait_until("the reservation to be released", || {
        r.app.uploads.in_flight.usage(account) == (0, 0)
    })
    .await;
    wait_until("the spool to be removed", || {
        files_under(&spool_dir(&r)).is_empty()
    })
    .await;
    let resp = upload(&r, &c.key, "image/png", &png(5 * MIB)).await;
    assert_eq!(resp.status(), 201);
}

#[tokio::test(flavor = "multi_thread")]
async fn four_uploads_of_an_account_at_once_and_a_fifth_is_429() {
    // Issue 33: ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT (4) at its boundary;
    // another account is not affected.
    let (r, c) = TestRouter::start_rich().await;
    let other = r.rich_customer().await;
    let body = multipart(&[file_part("image/png", &png(512 * 1024))]);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(HeldUpload::open(&r, &c.key, body.clone(), 1024, false).await);
    }
    wait_until("four uploads to spool", || {
        files_under(&spool_dir(&r)).len() == 4
    })
    .await;
    let fifth = HeldUpload::open(&r, &c.key, body.clone(), 0, false).await;
    let (status, retry_after, answer) = fifth.answer().await;
    assert_eq!(
        (status, code(&answer)),
        (429, "upload_rate_limit"),
        "{answer}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    for field in ["message", "type", "param"] {
        assert!(answer["error"].get(field).is_some(), "{answer}");
    }
    assert_eq!(upload_png(&r, &other.key).await["object"], "upload");

    // One ends: the next fits, and it is the fourth again.
    let (status, _, answer) = held.pop().unwrap().finish().await;
    assert_eq!(status, 201, "{answer}");
    let next = HeldUpload::open(&r, &c.key, body.clone(), 1024, false).await;
    wait_until("the next upload to spool", || {
        files_under(&spool_dir(&r)).len() == 4
    })
    .await;
    let extra = HeldUpload::open(&r, &c.key, body.clone(), 0, false).await;
    let (status, _, answer) = extra.answer().await;
    assert_eq!(
        (status, code(&answer)),
        (429, "upload_rate_limit"),
        "{answer}"
    );
    held.push(next);
    for upload in held {
        let (status, _, answer) = upload.finish().await;
        assert_eq!(status, 201, "{answer}");
    }
    assert_eq!(
        r.app.uploads.in_flight.usage(uuid_of(&c.account_id)),
        (0, 0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_total_cap_uploads_are_503_with_retry_after() {
    // Issue 33: ROUTER_UPLOAD_CONCURRENCY_TOTAL counts every account's
    // uploads in progress on the instance.
    let r = TestRouter::start_uploads(UploadSettings {
        concurrency_total: 2,
        ..test_uploads()
    })
    .await;
    let (a, b, c) = (
        r.rich_customer().await,
        r.rich_customer().await,
        r.rich_customer().await,
    );
    let body = multipart(&[file_part("image/png", &png(512 * 1024))]);
    let held_a = HeldUpload::open(&r, &a.key, body.clone(), 1024, false).await;
    let held_b = HeldUpload::open(&r, &b.key, body.clone(), 1024, false).await;
    wait_until("two uploads to spool", || {
        files_under(&spool_dir(&r)).len() == 2
    })
    .await;
    let resp = upload(&r, &c.key, "image/png", &png_1x1()).await;
    assert_eq!(resp.headers()["retry-after"], "1");
    expect_error(resp, 503, "uploads_unavailable").await;

    drop(held_a);
    wait_until("the dropped upload to end", || {
        r.app.uploads.in_flight.usage(uuid_of(&a.account_id)).0 == 1
    })
    .await;
    upload_png(&r, &c.key).await;
    let (status, _, answer) = held_b.finish().await;
    assert_eq!(status, 201, "{answer}");
}
