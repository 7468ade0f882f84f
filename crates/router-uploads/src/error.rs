//! Every public outcome of an upload that is not a success, and the
//! `ApiError` each is answered with (the code gives the status).

use crate::in_flight::Refusal;
use crate::{MAX_ENVELOPE_BYTES, MAX_FILE_BYTES, MAX_PIXELS, MAX_SIDE};
use router_canonical::{ApiError, ErrorCode};
use router_core::product_codes;
use router_core::store::StoreError;
use router_store::uploads::AdmitError;

/// Why an upload, a deletion or an upload reference was refused.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// This many uploads are in progress on this instance already
    /// (`ROUTER_UPLOAD_CONCURRENCY_TOTAL`): 503, retry after 1 s.
    #[error("{0} uploads are in progress on this instance")]
    Busy(usize),
    /// This many uploads of the account are in progress already
    /// (`ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT`): 429, retry after 1 s.
    #[error("{0} uploads of this account are in progress")]
    AccountBusy(usize),
    /// The account's zero data retention is on: 403.
    #[error("zero data retention is on for this account")]
    DataProtection,
    /// The account's rate is spent: 429, a slot opens in `retry_after_secs`.
    #[error("upload rate spent; retry after {retry_after_secs} s")]
    Rate { retry_after_secs: u64 },
    /// The account's files or bytes leave no room for this one: 429.
    #[error("upload quota exceeded")]
    Quota,
    /// The body is over the envelope, or the file is empty or over the
    /// file limit: 413. Returned by [`crate::Uploads::begin`] for a declared
    /// length over the envelope: the body was not read.
    #[error("the upload is too large")]
    TooLarge,
    /// The body is not the one-part form expected: 400.
    #[error("invalid upload body: {0}")]
    InvalidUpload(Shape),
    /// The file is not an accepted image: 415.
    #[error("unsupported file: {0}")]
    Unsupported(Unsupported),
    /// The file is an accepted type, but not the one it was declared as: 415.
    #[error("declared {declared}, detected {detected}")]
    ContentTypeMismatch {
        declared: &'static str,
        detected: &'static str,
    },
    /// The body stream timed out ([`crate::ReadFailure`]): 408.
    #[error("the body did not arrive in time")]
    TimedOut,
    /// The object store is missing or failed, or the spool did: 503.
    #[error("uploads are unavailable")]
    Unavailable,
    /// The database failed: 500.
    #[error(transparent)]
    Store(StoreError),
    /// A request references an upload while its account's zero data
    /// retention is on: 503 `zdr_capacity_unavailable`.
    #[error("zero data retention is on: uploads cannot be read")]
    ReferencesUnderDataProtection,
    /// A reference to an upload that is not the caller's readable upload:
    /// 400 naming the part (`param`).
    #[error("no readable upload at {param}")]
    UnknownReference { param: String },
}

/// How a body is not the one-part form an upload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub enum Shape {
    NotMultipart,
    NotOneFile,
    OtherPart,
    Malformed,
}

impl Shape {
    /// What the client is told.
    pub fn message(self) -> &'static str {
        match self {
            Shape::NotMultipart => "The body must be multipart/form-data with a boundary.",
            Shape::NotOneFile => "Send exactly one part named `file`.",
            Shape::OtherPart => "The only part accepted is `file`.",
            Shape::Malformed => "The multipart body is malformed or truncated.",
        }
    }
}

/// How a file is not an accepted image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub enum Unsupported {
    /// Declared as none of the four types.
    Declared,
    /// Its first bytes are none of the four types'.
    Content,
    /// Data follows the format's end, or it is cut short.
    Incomplete,
    Header,
    /// Its structure is broken or carries another file or markup (a polyglot).
    Structure,
    /// Too large on a side or in pixels (a decompression bomb).
    Dimensions,
}

impl Unsupported {
    /// What the client is told.
    pub fn message(self) -> String {
        match self {
            Unsupported::Declared => "Only PNG, JPEG, WebP and GIF images are accepted (declare image/png, image/jpeg, image/webp or image/gif).".to_owned(),
            Unsupported::Content => "The file is not a PNG, JPEG, WebP or GIF image.".to_owned(),
            Unsupported::Incomplete => "The file is not one complete image (data follows its end, or it is cut short).".to_owned(),
            Unsupported::Header => "The image's header cannot be read.".to_owned(),
            Unsupported::Structure => "The file is not one well-formed image: its structure is broken, or it carries markup or another file.".to_owned(),
            Unsupported::Dimensions => format!(
                "Images may be at most {MAX_SIDE} pixels on a side and {MAX_PIXELS} pixels in all."
            ),
        }
    }
}

impl UploadError {
    /// The database failed (logged here, answered without details).
    pub(crate) fn store(error: StoreError) -> UploadError {
        tracing::error!(error = %error, "upload bookkeeping failure");
        UploadError::Store(error)
    }
}

impl From<AdmitError> for UploadError {
    fn from(error: AdmitError) -> Self {
        match error {
            AdmitError::DataProtection => UploadError::DataProtection,
            AdmitError::Rate { retry_after_secs } => UploadError::Rate { retry_after_secs },
            AdmitError::Quota => UploadError::Quota,
            AdmitError::Store(e) => UploadError::store(e),
        }
    }
}

impl From<Refusal> for UploadError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Total(n) => {
                tracing::warn!(error = %refusal, "an upload was refused: ROUTER_UPLOAD_CONCURRENCY_TOTAL");
                UploadError::Busy(n)
            }
            Refusal::Account(n) => UploadError::AccountBusy(n),
            Refusal::Quota => UploadError::Quota,
        }
    }
}

impl From<UploadError> for ApiError {
    fn from(error: UploadError) -> Self {
        match error {
            UploadError::Busy(_) => ApiError::new(
                product_codes::UPLOADS_UNAVAILABLE,
                "Too many uploads are in progress; retry shortly.",
            )
            .with_retry_after(Some(1)),
            UploadError::AccountBusy(n) => ApiError::new(
                product_codes::UPLOAD_RATE_LIMIT,
                format!("At most {n} uploads of an account may be in progress at once."),
            )
            .with_retry_after(Some(1)),
            UploadError::DataProtection => ApiError::new(
                product_codes::DATA_PROTECTION_RESTRICTION,
                "Zero data retention is on for this account: uploads are not accepted.",
            ),
            UploadError::Rate { retry_after_secs } => ApiError::new(
                product_codes::UPLOAD_RATE_LIMIT,
                "Upload rate exceeded: 20 a minute and 120 a day per account.",
            )
            .with_retry_after(Some(retry_after_secs)),
            UploadError::Quota => ApiError::new(
                product_codes::UPLOAD_QUOTA_EXCEEDED,
                "Upload quota exceeded: 32 files and 64 MiB per account, until uploads expire or are removed.",
            ),
            UploadError::TooLarge => ApiError::new(
                product_codes::UPLOAD_TOO_LARGE,
                format!(
                    "The file must be 1 to {MAX_FILE_BYTES} bytes, in a body of at most {MAX_ENVELOPE_BYTES} bytes."
                ),
            )
            .with_param("file"),
            UploadError::InvalidUpload(shape) => {
                ApiError::new(product_codes::INVALID_UPLOAD, shape.message()).with_param("file")
            }
            UploadError::Unsupported(why) => {
                ApiError::new(product_codes::UNSUPPORTED_FILE_TYPE, why.message()).with_param("file")
            }
            UploadError::ContentTypeMismatch { declared, detected } => ApiError::new(
                product_codes::INVALID_CONTENT_TYPE,
                format!("The file is declared `{declared}` but its content is `{detected}`."),
            )
            .with_param("file"),
            UploadError::TimedOut => ApiError::new(
                ErrorCode::RequestTimeout,
                "The request body did not arrive in time.",
            ),
            UploadError::Unavailable => ApiError::new(
                product_codes::UPLOADS_UNAVAILABLE,
                "Uploads are temporarily unavailable.",
            ),
            UploadError::Store(e) => e.api_error(),
            UploadError::ReferencesUnderDataProtection => ApiError::new(
                product_codes::ZDR_CAPACITY_UNAVAILABLE,
                "Zero data retention is on for this account: uploaded images cannot be read.",
            ),
            UploadError::UnknownReference { param } => ApiError::invalid(
                param,
                "The referenced upload does not exist or is no longer available.",
            ),
        }
    }
}
