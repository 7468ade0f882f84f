//! The complete PNG check: an image is delivered and charged
//! only if every byte of it is a well-formed PNG.
//!
//! Checked, per the PNG specification (ISO/IEC 15948): the 8-byte
//! signature; every chunk's length (at most 2^31 - 1 and inside the data),
//! type (four ASCII letters) and CRC-32 over type and data; `IHDR` first,
//! 13 bytes, with sane dimensions (1..=[`MAX_SIDE`] per side, at most
//! [`MAX_PIXELS`] in all, so a header cannot claim a bomb) and a valid bit
//! depth / colour type pair; at least one `IDAT`, all of them consecutive;
//! `IEND` last, empty, with nothing after it. Pixel data is not inflated:
//! the chunk structure and every CRC is what proves the supplier's bytes
//! arrived whole.

/// The PNG signature.
pub const SIGNATURE: [u8; 8] = *b"\x89PNG\r\n\x1a\n";

/// The largest width or height accepted.
pub const MAX_SIDE: u32 = 16_384;

/// The largest pixel count accepted (64 Mpx).
pub const MAX_PIXELS: u64 = 64 * 1024 * 1024;

/// Why bytes are not one complete, valid PNG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PngError {
    /// The PNG signature is missing.
    #[error("not a PNG: the signature is missing")]
    Signature,
    /// A chunk ends past the data.
    #[error("truncated PNG: chunk {index} ends past the data")]
    Truncated {
        /// The chunk's position, from 0.
        index: usize,
    },
    /// A chunk type is not four ASCII letters.
    #[error("chunk {index} has an invalid type")]
    ChunkType {
        /// The chunk's position, from 0.
        index: usize,
    },
    /// A chunk fails its CRC.
    #[error("chunk {index} (`{kind}`) fails its CRC")]
    Crc {
        /// The chunk's position, from 0.
        index: usize,
        /// The chunk's type.
        kind: String,
    },
    /// The first chunk is not a 13-byte IHDR.
    #[error("the first chunk is not a 13-byte IHDR")]
    HeaderFirst,
    /// IHDR appears again.
    #[error("IHDR appears again at chunk {index}")]
    HeaderRepeated {
        /// The chunk's position, from 0.
        index: usize,
    },
    /// The dimensions are zero or implausibly large.
    #[error("implausible dimensions {width}x{height}")]
    Dimensions {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// The bit depth is not valid for the colour type.
    #[error("invalid bit depth {bit_depth} for colour type {color_type}")]
    Format {
        /// Bits per sample.
        bit_depth: u8,
        /// The IHDR colour type.
        color_type: u8,
    },
    /// IDAT chunks are missing or not consecutive.
    #[error("IDAT chunks are missing or not consecutive")]
    ImageData,
    /// IEND is missing, not empty, or not last.
    #[error("IEND is missing, not empty, or not last")]
    End,
}

/// What the header of a valid PNG says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PngInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Check `bytes` is one complete PNG.
pub fn validate(bytes: &[u8]) -> Result<PngInfo, PngError> {
    let mut rest = bytes.strip_prefix(&SIGNATURE).ok_or(PngError::Signature)?;
    let mut info = None;
    let mut idat = IdatRun::Before;
    let mut index = 0usize;
    loop {
        if rest.len() < 12 {
            return Err(if rest.is_empty() {
                PngError::End
            } else {
                PngError::Truncated { index }
            });
        }
        let length = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if length > i32::MAX as u32 || rest.len() - 12 < length as usize {
            return Err(PngError::Truncated { index });
        }
        let length = length as usize;
        let kind = &rest[4..8];
        if !kind.iter().all(u8::is_ascii_alphabetic) {
            return Err(PngError::ChunkType { index });
        }
        let data = &rest[8..8 + length];
        let stored = u32::from_be_bytes([
            rest[8 + length],
            rest[9 + length],
            rest[10 + length],
            rest[11 + length],
        ]);
        if crc32(&rest[4..8 + length]) != stored {
            return Err(PngError::Crc {
                index,
                kind: String::from_utf8_lossy(kind).into_owned(),
            });
        }
        rest = &rest[12 + length..];
        match (index, kind) {
            (0, b"IHDR") => info = Some(header(data)?),
            (0, _) => return Err(PngError::HeaderFirst),
            (_, b"IHDR") => return Err(PngError::HeaderRepeated { index }),
            (_, b"IDAT") => match idat {
                IdatRun::Before | IdatRun::Inside => idat = IdatRun::Inside,
                IdatRun::After => return Err(PngError::ImageData),
            },
            (_, b"IEND") => {
                if idat == IdatRun::Before {
                    return Err(PngError::ImageData);
                }
                if length != 0 || !rest.is_empty() {
                    return Err(PngError::End);
                }
                return info.ok_or(PngError::HeaderFirst);
            }
            _ => {
                if idat == IdatRun::Inside {
                    idat = IdatRun::After;
                }
            }
        }
        index += 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdatRun {
    Before,
    Inside,
    After,
}

fn header(data: &[u8]) -> Result<PngInfo, PngError> {
    let [
        w0,
        w1,
        w2,
        w3,
        h0,
        h1,
        h2,
        h3,
        bit_depth,
        color_type,
        compression,
        filter,
        interlace,
    ] = *data
    else {
        return Err(PngError::HeaderFirst);
    };
    let width = u32::from_be_bytes([w0, w1, w2, w3]);
    let height = u32::from_be_bytes([h0, h1, h2, h3]);
    if width == 0
        || height == 0
        || width > MAX_SIDE
        || height > MAX_SIDE
        || u64::from(width) * u64::from(height) > MAX_PIXELS
    {
        return Err(PngError::Dimensions { width, height });
    }
    let depth_ok = match color_type {
        0 => matches!(bit_depth, 1 | 2 | 4 | 8 | 16),
        3 => matches!(bit_depth, 1 | 2 | 4 | 8),
        2 | 4 | 6 => matches!(bit_depth, 8 | 16),
        _ => false,
    };
    if !depth_ok || compression != 0 || filter != 0 || interlace > 1 {
        return Err(PngError::Format {
            bit_depth,
            color_type,
        });
    }
    Ok(PngInfo { width, height })
}

/// CRC-32 (ISO 3309, the PNG one): the canonical crate's, shared with the
/// AWS event stream.
pub use router_canonical::checksum::crc32;

/// Append one chunk (length, type, data, CRC) to `out`: for building test
/// images and fixtures.
pub fn write_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A valid 1x1 opaque red PNG (8-bit RGB; the IDAT is a stored zlib
/// stream), for tests, fixtures and the mock supplier.
pub fn tiny_png() -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    write_chunk(&mut out, b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
    // zlib: header 78 01, one stored block of the scanline [filter 0, R, G, B],
    // then the Adler-32 of that scanline.
    let scanline = [0u8, 0xFF, 0, 0];
    let mut zlib = vec![0x78, 0x01, 0x01, 0x04, 0x00, 0xFB, 0xFF];
    zlib.extend_from_slice(&scanline);
    zlib.extend_from_slice(&adler32(&scanline).to_be_bytes());
    write_chunk(&mut out, b"IDAT", &zlib);
    write_chunk(&mut out, b"IEND", &[]);
    out
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_the_png_one() {
        // The IEND chunk's CRC is fixed by the specification.
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn a_complete_png_passes() {
        let png = tiny_png();
        assert_eq!(
            validate(&png),
            Ok(PngInfo {
                width: 1,
                height: 1
            })
        );
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]));
    }

    /// Every cut of a valid PNG is refused.
    #[test]
    fn every_truncation_is_refused() {
        let png = tiny_png();
        for cut in 0..png.len() {
            assert!(validate(&png[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn every_flipped_byte_after_the_signature_is_refused() {
        let png = tiny_png();
        for at in 0..png.len() {
            let mut bad = png.clone();
            bad[at] ^= 0x01;
            assert!(validate(&bad).is_err(), "flip at {at}");
        }
    }

    #[test]
    fn structure_rules_hold() {
        let ihdr = |w: u32, h: u32, depth: u8, color: u8| {
            let mut d = w.to_be_bytes().to_vec();
            d.extend_from_slice(&h.to_be_bytes());
            d.extend_from_slice(&[depth, color, 0, 0, 0]);
            d
        };
        let build = |chunks: &[(&[u8; 4], Vec<u8>)]| {
            let mut out = SIGNATURE.to_vec();
            for (kind, data) in chunks {
                write_chunk(&mut out, kind, data);
            }
            out
        };
        let idat = || (b"IDAT", vec![1, 2, 3]);
        let iend = || (b"IEND", vec![]);
        let good = build(&[(b"IHDR", ihdr(2, 2, 8, 6)), idat(), idat(), iend()]);
        assert!(validate(&good).is_ok());
        let cases = [
            (build(&[idat(), iend()]), PngError::HeaderFirst),
            (
                build(&[(b"IHDR", ihdr(2, 2, 8, 6)), iend()]),
                PngError::ImageData,
            ),
            (
                build(&[(b"IHDR", ihdr(65_535, 65_535, 8, 6)), idat(), iend()]),
                PngError::Dimensions {
                    width: 65_535,
                    height: 65_535,
                },
            ),
            (
                build(&[(b"IHDR", ihdr(0, 2, 8, 6)), idat(), iend()]),
                PngError::Dimensions {
                    width: 0,
                    height: 2,
                },
            ),
            (
                build(&[(b"IHDR", ihdr(2, 2, 3, 2)), idat(), iend()]),
                PngError::Format {
                    bit_depth: 3,
                    color_type: 2,
                },
            ),
            (
                build(&[
                    (b"IHDR", ihdr(2, 2, 8, 6)),
                    idat(),
                    (b"tEXt", vec![b'a']),
                    idat(),
                    iend(),
                ]),
                PngError::ImageData,
            ),
            (
                build(&[(b"IHDR", ihdr(2, 2, 8, 6)), idat(), (b"IEND", vec![0])]),
                PngError::End,
            ),
            (build(&[(b"IHDR", ihdr(2, 2, 8, 6)), idat()]), PngError::End),
        ];
        for (bytes, expected) in cases {
            assert_eq!(validate(&bytes), Err(expected));
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(validate(&trailing).is_err());
        assert_eq!(validate(b"GIF89a....."), Err(PngError::Signature));
    }
}
