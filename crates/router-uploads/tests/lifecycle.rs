//! Uploads without HTTP: multipart bodies as byte streams into the wing,
//! against a fresh PostgreSQL database per test (`DATABASE_URL`) and a
//! folder object store of its own.

// Helpers outside `#[test]` functions panic on failure like the tests do
// (clippy's allow-unwrap-in-tests covers only the test functions).
#![expect(clippy::unwrap_used)]

use bytes::Bytes;
use router_canonical::{ApiError, ContentPart, ImageSource, Message, Request, Role};
use router_core::product_codes;
use router_store::test_support::TestDatabase;
use router_uploads::{
    ObjectStorage, ReadFailure, Shape, Unsupported, UploadError, UploadSettings, Uploads,
};
use std::time::Duration;
use uuid::Uuid;

const BOUNDARY: &str = "wing-test-boundary";

/// A valid 1×1 grayscale PNG (67 bytes).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x01\0\0\0\x01\x08\0\0\0\0\x3a\x7e\x9b\x55\0\0\0\x0aIDATx\x9c\x63\x60\0\0\0\x02\0\x01\x48\xaf\xa4\x71\0\0\0\0IEND\xae\x42\x60\x82";

/// A form of one part named `name`, declared `content_type`.
fn form(name: &str, content_type: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"pixel.png\"\r\nContent-Type: {content_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn content_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// `body` as a connection might deliver it: in pieces of 7 bytes.
fn chunks(body: &[u8]) -> futures::stream::Iter<std::vec::IntoIter<Result<Bytes, ()>>> {
    let pieces: Vec<Result<Bytes, ()>> = body
        .chunks(7)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    futures::stream::iter(pieces)
}

/// A body stream that stopped arriving in time.
#[derive(Debug)]
struct Stalled;

impl ReadFailure for Stalled {
    fn timed_out(&self) -> bool {
        true
    }
}

struct Wing {
    uploads: Uploads,
    account: Uuid,
    root: std::path::PathBuf,
    _db: TestDatabase,
}

async fn wing(ttl: Duration) -> Wing {
    let db = TestDatabase::new().await;
    let account = db
        .create_account(&format!("{}@example.test", Uuid::new_v4().simple()), true)
        .await
        .unwrap()
        .id;
    let root = std::env::temp_dir()
        .join("router-uploads-wing")
        .join(Uuid::new_v4().simple().to_string());
    let settings = UploadSettings {
        storage: Some(ObjectStorage::from_url(&format!("file://{}", root.display())).unwrap()),
        ttl,
        tombstone: Duration::from_secs(1),
        ..UploadSettings::default()
    };
    Wing {
        uploads: Uploads::new(settings, db.database().clone()),
        account,
        root,
        _db: db,
    }
}

impl Wing {
    async fn upload(&self, body: &[u8]) -> Result<router_uploads::UploadRecord, UploadError> {
        let declared = Some(body.len() as u64);
        self.uploads
            .begin(self.account, declared)
            .await?
            .receive(&content_type(), chunks(body))
            .await
    }

    /// Files in the folder store, the spool folder aside.
    fn stored_files(&self) -> usize {
        let uploads = self.root.join("uploads");
        std::fs::read_dir(uploads).map_or(0, |dir| dir.count())
    }
}

fn referencing(file_id: &str) -> Request {
    Request {
        model: "any".to_owned(),
        messages: vec![Message {
            role: Role::User,
            content: vec![ContentPart::Image {
                source: ImageSource::Upload {
                    file_id: file_id.to_owned(),
                    param: String::new(),
                },
                detail: None,
                cache_control: None,
            }],
            content_was_string: false,
            name: None,
        }],
        ..Request::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_is_received_resolved_deleted_and_purged() {
    let w = wing(Duration::from_secs(3600)).await;
    let record = w.upload(&form("file", "image/png", PNG)).await.unwrap();
    assert!(record.id.starts_with("upl_"), "{}", record.id);
    assert_eq!(record.object, "upload");
    assert_eq!(record.filename.as_deref(), Some("pixel.png"));
    assert_eq!(record.bytes, PNG.len() as i64);
    assert_eq!(record.mime_type, "image/png");
    assert_eq!(record.expires_at - record.created_at, 3600);
    assert_eq!(w.stored_files(), 1);
    assert_eq!(w.uploads.in_flight.usage(w.account), (0, 0));

    // An inference request's reference becomes the bytes, base64.
    let mut request = referencing(&record.id);
    w.uploads
        .resolve_references(w.account, false, &mut request)
        .await
        .unwrap();
    let ContentPart::Image { source, .. } = &request.messages[0].content[0] else {
        panic!("not an image part");
    };
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(PNG);
    assert_eq!(
        source,
        &ImageSource::Base64 {
            media_type: "image/png".to_owned(),
            data
        }
    );
    // Not under the account's zero data retention, and not another account's.
    let mut request = referencing(&record.id);
    let e = w
        .uploads
        .resolve_references(w.account, true, &mut request)
        .await
        .unwrap_err();
    assert!(
        matches!(e, UploadError::ReferencesUnderDataProtection),
        "{e:?}"
    );
    let e = w
        .uploads
        .resolve_references(Uuid::now_v7(), false, &mut request)
        .await
        .unwrap_err();
    let UploadError::UnknownReference { param } = e else {
        panic!("{e:?}");
    };
    assert_eq!(param, "messages[0].content[0]");

    // Deleted: once, then it is no more; the purge removes its object.
    assert!(w.uploads.delete(w.account, &record.id).await.unwrap());
    assert!(!w.uploads.delete(w.account, &record.id).await.unwrap());
    assert!(!w.uploads.delete(w.account, "upl_nonsense").await.unwrap());
    let e = w
        .uploads
        .resolve_references(w.account, false, &mut referencing(&record.id))
        .await
        .unwrap_err();
    assert!(matches!(e, UploadError::UnknownReference { .. }), "{e:?}");
    assert_eq!(w.uploads.purge_pass().await.unwrap(), 1);
    assert_eq!(w.stored_files(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_upload_is_scheduled_then_purged() {
    let w = wing(Duration::from_secs(1)).await;
    let record = w.upload(&form("file", "image/png", PNG)).await.unwrap();
    let mut expired = 0;
    for _ in 0..50 {
        expired = w.uploads.expiry_pass().await.unwrap();
        if expired > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(expired, 1);
    assert_eq!(w.uploads.purge_pass().await.unwrap(), 1);
    assert_eq!(w.stored_files(), 0);
    assert!(!w.uploads.delete(w.account, &record.id).await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_are_typed_and_carry_their_answer() {
    let w = wing(Duration::from_secs(3600)).await;
    let status = |e: UploadError| ApiError::from(e).status();

    // A declared length over the envelope: refused before the body is read.
    let e = w
        .uploads
        .begin(w.account, Some(router_uploads::MAX_ENVELOPE_BYTES + 1))
        .await
        .unwrap_err();
    assert!(matches!(e, UploadError::TooLarge), "{e:?}");
    assert_eq!(status(e), 413);

    let e = w
        .upload(&form("image", "image/png", PNG))
        .await
        .unwrap_err();
    assert!(
        matches!(e, UploadError::InvalidUpload(Shape::OtherPart)),
        "{e:?}"
    );
    assert_eq!(status(e), 400);

    let e = w
        .upload(&form("file", "image/jpeg", PNG))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            UploadError::ContentTypeMismatch {
                declared: "image/jpeg",
                detected: "image/png"
            }
        ),
        "{e:?}"
    );
    let e = w
        .upload(&form("file", "image/png", &[PNG, b"trailer"].concat()))
        .await
        .unwrap_err();
    assert!(
        matches!(e, UploadError::Unsupported(Unsupported::Incomplete)),
        "{e:?}"
    );
    let api = ApiError::from(e);
    assert_eq!(
        (api.code, api.status()),
        (product_codes::UNSUPPORTED_FILE_TYPE, 415)
    );
    assert_eq!(api.param.as_deref(), Some("file"));

    // A body that stops arriving is a timeout, one that breaks is malformed.
    let body = form("file", "image/png", PNG);
    let stalled =
        futures::stream::iter(vec![Ok(Bytes::copy_from_slice(&body[..40])), Err(Stalled)]);
    let e = w
        .uploads
        .begin(w.account, None)
        .await
        .unwrap()
        .receive(&content_type(), stalled)
        .await
        .unwrap_err();
    assert!(matches!(e, UploadError::TimedOut), "{e:?}");
    assert_eq!(status(e), 408);
    let e = w
        .uploads
        .begin(w.account, None)
        .await
        .unwrap()
        .receive(&content_type(), chunks(&body[..body.len() - 5]))
        .await
        .unwrap_err();
    assert!(
        matches!(e, UploadError::InvalidUpload(Shape::Malformed)),
        "{e:?}"
    );

    // None of them was admitted, stored, or still holds anything.
    assert_eq!(w.stored_files(), 0);
    assert_eq!(w.uploads.in_flight.usage(w.account), (0, 0));
}
