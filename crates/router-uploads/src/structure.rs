//! Each accepted image read whole, by its own structure: PNG chunk by
//! chunk, GIF block by block, JPEG segment by segment, WebP by RIFF chunk.
//! A signature and a trailer are not enough: a PNG shell with no image
//! data can carry an HTML page and a ZIP archive in its chunks and still
//! start and end like a PNG (issue 33). So, per format:
//!
//! - the structure is complete: every length inside the data, the pieces in
//!   their order, at least one image, and nothing after the end;
//! - a piece a reader may not skip is one the format registers (an unknown
//!   critical PNG chunk or JPEG marker is refused);
//! - the pieces a writer fills freely (PNG text, private and other
//!   ancillary chunks, GIF comments and application extensions, JPEG APPn
//!   and COM segments, WebP metadata and unknown chunks) carry no HTML or
//!   script markup and no ZIP record. Real images keep their private
//!   chunks (a macOS screenshot's `iDOT`). Compressed pixel data is not searched: it is not read as
//!   text by anything, and any four bytes occur in it by chance.

use memchr::memmem;

/// Why a file is not one well-formed image of its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StructureError {
    /// Cut short, out of order, without an image, or with data after its end.
    #[error("the image's structure is broken")]
    Malformed,
    /// A piece the format does not register, or metadata carrying markup or
    /// another file.
    #[error("the image carries something other than an image")]
    Foreign,
}

use StructureError::{Foreign, Malformed};

/// Checks `bytes` as one image of `mime` (one of the four accepted types;
/// the signature was already matched).
pub fn check(mime: &str, bytes: &[u8]) -> Result<(), StructureError> {
    match mime {
        "image/png" => png(bytes),
        "image/gif" => gif(bytes),
        "image/jpeg" => jpeg(bytes),
        "image/webp" => webp(bytes),
        _ => Err(Malformed),
    }
}

/// Markup a browser would run or render, and ZIP records (a local file
/// header, a central directory entry, its end), searched case-insensitively.
const FOREIGN: [&[u8]; 14] = [
    b"<script",
    b"<html",
    b"<!doctype",
    b"<iframe",
    b"<body",
    b"<svg",
    b"<object",
    b"<embed",
    b"<?php",
    b"javascript:",
    b"pk\x03\x04",
    b"pk\x01\x02",
    b"pk\x05\x06",
    b"pk\x07\x08",
];

fn clean(metadata: &[u8]) -> Result<(), StructureError> {
    let lower = metadata.to_ascii_lowercase();
    if FOREIGN.iter().any(|p| memmem::find(&lower, p).is_some()) {
        Err(Foreign)
    } else {
        Ok(())
    }
}

/// The PNG chunks registered with the PNG specification (third edition,
/// with APNG's three), critical and ancillary.
const PNG_CHUNKS: [&[u8; 4]; 24] = [
    b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"cHRM", b"gAMA", b"iCCP", b"sBIT", b"sRGB",
    b"cICP", b"mDCV", b"cLLI", b"tEXt", b"zTXt", b"iTXt", b"bKGD", b"hIST", b"pHYs", b"sPLT",
    b"eXIf", b"tIME", b"acTL", b"fcTL",
];

fn png(bytes: &[u8]) -> Result<(), StructureError> {
    // Lengths, order, CRCs, IHDR first, IDAT present and consecutive, IEND
    // last with nothing after it: the same check as generated images.
    router_images::png::validate(bytes).map_err(|_| Malformed)?;
    let mut rest = &bytes[router_images::png::SIGNATURE.len()..];
    while rest.len() >= 12 {
        let length = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let kind = &rest[4..8];
        let data = &rest[8..8 + length];
        if kind == b"fdAT" || kind == b"IDAT" {
            // Compressed frames: not text.
        } else if PNG_CHUNKS.iter().any(|k| k.as_slice() == kind) || kind[0].is_ascii_lowercase() {
            // Registered, or ancillary (a lower-case first letter): readers
            // skip it, so it is where a second file hides.
            clean(data)?;
        } else {
            return Err(Foreign);
        }
        rest = &rest[12 + length..];
    }
    Ok(())
}

/// The sub-blocks starting at `at` (each a length byte and that many
/// bytes, ended by a zero length): their joined payload and where they end.
fn sub_blocks(bytes: &[u8], mut at: usize) -> Result<(Vec<u8>, usize), StructureError> {
    let mut payload = Vec::new();
    loop {
        let n = usize::from(*bytes.get(at).ok_or(Malformed)?);
        at += 1;
        if n == 0 {
            return Ok((payload, at));
        }
        payload.extend_from_slice(bytes.get(at..at + n).ok_or(Malformed)?);
        at += n;
    }
}

fn color_table(flags: u8) -> usize {
    if flags & 0x80 == 0 {
        0
    } else {
        3 << ((flags & 7) + 1)
    }
}

fn gif(bytes: &[u8]) -> Result<(), StructureError> {
    // Header (6) and logical screen descriptor (7), then its colour table.
    let flags = *bytes.get(10).ok_or(Malformed)?;
    let mut at = 13 + color_table(flags);
    let mut images = 0usize;
    loop {
        match *bytes.get(at).ok_or(Malformed)? {
            // The trailer: the last byte, after at least one image.
            0x3B => {
                return if at + 1 == bytes.len() && images > 0 {
                    Ok(())
                } else {
                    Err(Malformed)
                };
            }
            0x21 => {
                let label = *bytes.get(at + 1).ok_or(Malformed)?;
                let (payload, end) = sub_blocks(bytes, at + 2)?;
                match label {
                    // Graphic control: fixed fields.
                    0xF9 => {}
                    // Comment, application, plain text and any other: free bytes.
                    _ => clean(&payload)?,
                }
                at = end;
            }
            0x2C => {
                let flags = *bytes.get(at + 9).ok_or(Malformed)?;
                at += 10 + color_table(flags);
                let code_size = *bytes.get(at).ok_or(Malformed)?;
                if !(1..=11).contains(&code_size) {
                    return Err(Malformed);
                }
                let (_, end) = sub_blocks(bytes, at + 1)?;
                at = end;
                images += 1;
            }
            _ => return Err(Malformed),
        }
    }
}

fn jpeg(bytes: &[u8]) -> Result<(), StructureError> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err(Malformed);
    }
    let (mut at, mut frame, mut scan) = (2usize, false, false);
    loop {
        if *bytes.get(at).ok_or(Malformed)? != 0xFF {
            return Err(Malformed);
        }
        // Fill bytes before a marker.
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *bytes.get(at).ok_or(Malformed)?;
        at += 1;
        match marker {
            // EOI: last, after a frame and a scan.
            0xD9 => {
                return if at == bytes.len() && frame && scan {
                    Ok(())
                } else {
                    Err(Malformed)
                };
            }
            0xD0..=0xD7 | 0x01 => continue,
            0x00 | 0xD8 => return Err(Malformed),
            _ => {}
        }
        let length = bytes
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
            .ok_or(Malformed)?;
        let segment = bytes.get(at + 2..at + length).ok_or(Malformed)?;
        if length < 2 {
            return Err(Malformed);
        }
        match marker {
            0xE0..=0xEF | 0xFE => clean(segment)?,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => frame = true,
            // DHT, DAC, DQT, DRI, DNL, DHP, EXP, SOS and JPG extensions.
            0xC4 | 0xCC | 0xDA..=0xDF | 0xF0..=0xFD => {}
            _ => return Err(Foreign),
        }
        at += length;
        if marker == 0xDA {
            if !frame {
                return Err(Malformed);
            }
            scan = true;
            // Entropy-coded data runs to the next marker that is neither a
            // stuffed zero nor a restart.
            loop {
                let next = at
                    + memchr::memchr(0xFF, bytes.get(at..).ok_or(Malformed)?).ok_or(Malformed)?;
                match bytes.get(next + 1) {
                    Some(0x00 | 0xD0..=0xD7) => at = next + 2,
                    Some(_) => {
                        at = next;
                        break;
                    }
                    None => return Err(Malformed),
                }
            }
        }
    }
}

fn webp(bytes: &[u8]) -> Result<(), StructureError> {
    let riff = bytes
        .get(4..8)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or(Malformed)?;
    if riff.checked_add(8) != Some(bytes.len()) {
        return Err(Malformed);
    }
    let (mut at, mut image) = (12usize, false);
    while at < bytes.len() {
        let head = bytes.get(at..at + 8).ok_or(Malformed)?;
        let size = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let data = bytes.get(at + 8..at + 8 + size).ok_or(Malformed)?;
        match &head[..4] {
            b"VP8 " | b"VP8L" | b"ANMF" => image = true,
            b"VP8X" | b"ALPH" | b"ANIM" | b"ICCP" => {}
            // EXIF, XMP and chunks readers skip: free bytes.
            _ => clean(data)?,
        }
        // Chunks are padded to an even size.
        at += 8 + size + (size & 1);
    }
    if at == bytes.len() && image {
        Ok(())
    } else {
        Err(Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_images::png::{SIGNATURE, tiny_png, write_chunk};

    const ZIP: &[u8] = b"PK\x03\x04\x14\0\0\0\0\0payload.txtPK\x05\x06\0\0\0\0";
    const HTML: &[u8] = b"<HTML><script>alert(document.cookie)</script></html>";

    fn png_with(chunks: &[(&[u8; 4], &[u8])], idat: bool) -> Vec<u8> {
        let tiny = tiny_png();
        // tiny_png: signature, IHDR (25 bytes), IDAT, IEND (12 bytes).
        let ihdr = &tiny[8..33];
        let idat_chunk = &tiny[33..tiny.len() - 12];
        let mut out = SIGNATURE.to_vec();
        out.extend_from_slice(ihdr);
        for (kind, data) in chunks {
            write_chunk(&mut out, kind, data);
        }
        if idat {
            out.extend_from_slice(idat_chunk);
        }
        write_chunk(&mut out, b"IEND", &[]);
        out
    }

    /// A minimal GIF: header, a 1x1 screen with a 2-colour table, an
    /// optional comment, one image, the trailer.
    fn gif_with(comment: Option<&[u8]>, image: bool) -> Vec<u8> {
        let mut out = b"GIF89a\x01\0\x01\0\x80\0\0".to_vec();
        out.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
        if let Some(text) = comment {
            out.extend_from_slice(&[0x21, 0xFE]);
            for piece in text.chunks(255) {
                out.push(piece.len() as u8);
                out.extend_from_slice(piece);
            }
            out.push(0);
        }
        if image {
            out.extend_from_slice(&[0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0]);
            out.extend_from_slice(&[2, 2, 0x4C, 0x01, 0]);
        }
        out.push(0x3B);
        out
    }

    /// A minimal baseline JPEG skeleton: SOI, an optional COM, SOF0, SOS
    /// with a few entropy bytes (a stuffed FF and a restart), EOI.
    fn jpeg_with(comment: Option<&[u8]>, scan: bool) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8];
        if let Some(text) = comment {
            out.extend_from_slice(&[0xFF, 0xFE]);
            out.extend_from_slice(&((text.len() + 2) as u16).to_be_bytes());
            out.extend_from_slice(text);
        }
        out.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 0, 1, 0, 1, 1, 1, 0x11, 0]);
        if scan {
            out.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 0x3F, 0]);
            out.extend_from_slice(&[0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56]);
        }
        out.extend_from_slice(&[0xFF, 0xD9]);
        out
    }

    fn webp_with(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
        let mut body = b"WEBP".to_vec();
        for (kind, data) in chunks {
            body.extend_from_slice(*kind);
            body.extend_from_slice(&(data.len() as u32).to_le_bytes());
            body.extend_from_slice(data);
            if data.len() % 2 == 1 {
                body.push(0);
            }
        }
        let mut out = b"RIFF".to_vec();
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn well_formed_images_pass() {
        assert_eq!(check("image/png", &tiny_png()), Ok(()));
        assert_eq!(
            check(
                "image/png",
                &png_with(&[(b"tEXt", b"Comment\0a red pixel")], true)
            ),
            Ok(())
        );
        assert_eq!(
            check("image/gif", &gif_with(Some(b"made by hand"), true)),
            Ok(())
        );
        assert_eq!(
            check("image/jpeg", &jpeg_with(Some(b"JFIF-ish"), true)),
            Ok(())
        );
        assert_eq!(
            check("image/webp", &webp_with(&[(b"VP8L", b"\x2f\0\0\0\0")])),
            Ok(())
        );
    }

    /// The attack's polyglots: a PNG shell with no IDAT carrying HTML and a
    /// ZIP, and the same cargo in GIF, JPEG and WebP metadata.
    #[test]
    fn polyglots_are_refused() {
        let no_idat = png_with(&[(b"tEXt", HTML), (b"zIPf", ZIP)], false);
        assert_eq!(check("image/png", &no_idat), Err(Malformed));
        assert_eq!(
            check("image/png", &png_with(&[(b"tEXt", HTML)], true)),
            Err(Foreign)
        );
        assert_eq!(
            check("image/png", &png_with(&[(b"zIPf", ZIP)], true)),
            Err(Foreign)
        );
        assert_eq!(
            check("image/png", &png_with(&[(b"iTXt", ZIP)], true)),
            Err(Foreign)
        );
        assert_eq!(
            check("image/gif", &gif_with(Some(HTML), true)),
            Err(Foreign)
        );
        assert_eq!(check("image/gif", &gif_with(Some(ZIP), true)), Err(Foreign));
        assert_eq!(check("image/gif", &gif_with(None, false)), Err(Malformed));
        assert_eq!(
            check("image/jpeg", &jpeg_with(Some(HTML), true)),
            Err(Foreign)
        );
        assert_eq!(
            check("image/jpeg", &jpeg_with(Some(ZIP), true)),
            Err(Foreign)
        );
        assert_eq!(check("image/jpeg", &jpeg_with(None, false)), Err(Malformed));
        let xmp = webp_with(&[(b"VP8L", b"\x2f\0\0\0\0"), (b"XMP ", HTML)]);
        assert_eq!(check("image/webp", &xmp), Err(Foreign));
        let zip = webp_with(&[(b"VP8L", b"\x2f\0\0\0\0"), (b"ZIPX", ZIP)]);
        assert_eq!(check("image/webp", &zip), Err(Foreign));
        // An unknown critical PNG chunk cannot be skipped: refused whatever it holds.
        assert_eq!(
            check("image/png", &png_with(&[(b"ZZZZ", b"x")], true)),
            Err(Foreign)
        );
        // A private ancillary chunk with plain data is kept.
        assert_eq!(
            check("image/png", &png_with(&[(b"iDOT", b"\0\0\0\x01")], true)),
            Ok(())
        );
        assert_eq!(
            check("image/webp", &webp_with(&[(b"EXIF", b"x")])),
            Err(Malformed)
        );
    }

    #[test]
    fn data_after_the_end_or_cut_short_is_malformed() {
        let mut gif = gif_with(None, true);
        gif.extend_from_slice(b"\x3B");
        assert_eq!(check("image/gif", &gif), Err(Malformed));
        let jpeg = jpeg_with(None, true);
        assert_eq!(check("image/jpeg", &jpeg[..jpeg.len() - 3]), Err(Malformed));
        let mut jpeg = jpeg;
        jpeg.extend_from_slice(&[0xFF, 0xD9]);
        assert_eq!(check("image/jpeg", &jpeg), Err(Malformed));
    }

    proptest::proptest! {
        /// Any bytes after any signature: judged without panicking.
        #[test]
        fn any_bytes_are_judged(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            for (mime, head) in [
                ("image/png", router_images::png::SIGNATURE.as_slice()),
                ("image/gif", b"GIF89a".as_slice()),
                ("image/jpeg", [0xFF, 0xD8, 0xFF].as_slice()),
                ("image/webp", b"RIFF\0\0\0\0WEBP".as_slice()),
            ] {
                let mut bytes = head.to_vec();
                bytes.extend_from_slice(&body);
                let _ = check(mime, &bytes);
            }
        }
    }
}
