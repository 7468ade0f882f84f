//! What a client sees of an upload: its public ID and its record.

use router_store::uploads::UploadRow;
use uuid::Uuid;

/// The public ID of an upload.
pub fn public_id(id: Uuid) -> String {
    format!("upl_{}", id.simple())
}

/// The upload behind a public ID (`upl_` and 32 hex digits); anything else
/// is `None`.
pub fn parse_public_id(text: &str) -> Option<Uuid> {
    let hex = text.strip_prefix("upl_")?;
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Uuid::try_parse(hex).ok()
}

/// The upload record (GP-01).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct UploadRecord {
    /// `upl_…`; reference it as `file_id` in an image part.
    pub id: String,
    /// Always `upload`.
    pub object: &'static str,
    pub filename: Option<String>,
    pub bytes: i64,
    pub mime_type: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; recorded at admission and never recomputed (CF-24).
    pub expires_at: i64,
}

impl UploadRecord {
    pub(crate) fn of(row: &UploadRow) -> UploadRecord {
        UploadRecord {
            id: public_id(row.id),
            object: "upload",
            filename: row.filename.clone(),
            bytes: row.bytes,
            mime_type: row.mime_type.clone(),
            created_at: row.created_at.timestamp(),
            expires_at: row.expires_at.timestamp(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_ids_round_trip_and_anything_else_is_none() {
        let id = Uuid::now_v7();
        assert_eq!(parse_public_id(&public_id(id)), Some(id));
        for bad in [
            "",
            "upl_",
            "upl_xyz",
            &id.to_string(),
            &format!("upl_{}", id),
            &format!("file_{}", id.simple()),
            "upl_..%2f",
        ] {
            assert_eq!(parse_public_id(bad), None, "{bad}");
        }
    }
}
