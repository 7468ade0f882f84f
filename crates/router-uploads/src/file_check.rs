//! The checks of a spooled file: its size (413), then its type (415: one
//! of four, declared and detected alike, ending where its format ends) and
//! its dimensions, read from the header alone before anything decodes it.

use crate::error::{Unsupported, UploadError};
use crate::spool::FilePart;
use crate::{MAX_FILE_BYTES, MAX_PIXELS, MAX_SIDE};

/// The four accepted types and their signatures.
const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

fn detected_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The format's own end: nothing may follow it (a polyglot with a second
/// file appended is refused).
fn ends_cleanly(mime: &str, part: &FilePart) -> bool {
    let tail = part.tail.as_slice();
    match mime {
        "image/png" => tail == b"\0\0\0\0IEND\xAE\x42\x60\x82",
        "image/jpeg" => tail.ends_with(&[0xFF, 0xD9]),
        "image/gif" => tail.ends_with(&[0x3B]),
        "image/webp" => {
            let riff = u32::from_le_bytes([part.head[4], part.head[5], part.head[6], part.head[7]]);
            u64::from(riff) + 8 == part.bytes
        }
        _ => false,
    }
}

/// The turns for reading a whole file into memory: one per core.
fn whole_file_turns() -> &'static tokio::sync::Semaphore {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        tokio::sync::Semaphore::new(cores)
    })
}

/// The size (413) and type (415) checks; the format and dimensions come
/// from the header alone, before anything decodes the image. A file larger
/// than its reservation was not kept whole: the quota answers (429) before
/// the type. The type and the width and height in pixels.
pub(crate) async fn check_file(part: &FilePart) -> Result<(&'static str, i32, i32), UploadError> {
    if part.bytes == 0 || part.bytes > MAX_FILE_BYTES {
        return Err(UploadError::TooLarge);
    }
    if part.bytes > part.limit {
        return Err(UploadError::Quota);
    }
    let unsupported = |why| Err(UploadError::Unsupported(why));
    let declared = part.declared.as_deref().unwrap_or_default();
    let Some(declared) = TYPES.iter().copied().find(|t| *t == declared) else {
        return unsupported(Unsupported::Declared);
    };
    let Some(detected) = detected_type(&part.head) else {
        return unsupported(Unsupported::Content);
    };
    if detected != declared {
        return Err(UploadError::ContentTypeMismatch { declared, detected });
    }
    if !ends_cleanly(detected, part) {
        return unsupported(Unsupported::Incomplete);
    }
    let path = part.spool.path.clone();
    // The whole file (at most 10 MiB) is read once, off the async threads:
    // its structure (a polyglot is refused) and then its header. The walk
    // is CPU work, so no more run at once than there are cores: 50
    // concurrent uploads otherwise held 50 whole files (300 MiB of RSS
    // in the upload bench) for no gain in time.
    let _turn = whole_file_turns()
        .acquire()
        .await
        .map_err(|_| UploadError::Unavailable)?;
    let read = tokio::task::spawn_blocking(move || {
        let bytes = std::fs::read(path).ok()?;
        Some((
            crate::structure::check(detected, &bytes),
            imagesize::blob_size(&bytes),
        ))
    })
    .await
    .map_err(|_| UploadError::Unavailable)?;
    let Some((structure, size)) = read else {
        return Err(UploadError::Unavailable);
    };
    if structure.is_err() {
        return unsupported(Unsupported::Structure);
    }
    let Ok(size) = size else {
        return unsupported(Unsupported::Header);
    };
    let pixels = (size.width as u64).saturating_mul(size.height as u64);
    if size.width == 0
        || size.height == 0
        || size.width > MAX_SIDE
        || size.height > MAX_SIDE
        || pixels > MAX_PIXELS
    {
        return unsupported(Unsupported::Dimensions);
    }
    let side = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    Ok((detected, side(size.width), side(size.height)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_of_the_four_types() {
        assert_eq!(detected_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(detected_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(detected_type(b"GIF89a......"), Some("image/gif"));
        assert_eq!(detected_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(detected_type(b"%PDF-1.7\n"), None);
        assert_eq!(detected_type(b"BM\x3a\0\0\0"), None);
        assert_eq!(detected_type(b"<svg xmlns"), None);
    }
}
