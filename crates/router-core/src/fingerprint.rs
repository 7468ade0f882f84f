//! The fingerprint of a serializable value (a SHA-256), computed without
//! rendering the value as JSON first: the one way a canonical request (or
//! a part of one) is hashed, for prompt-cache affinity's prefix
//! (`affinity.rs`) and the exact-response cache's key (`response_cache.rs`).
//!
//! Prompt-cache affinity fingerprints a request's prefix on every request
//! that takes part, and a prefix is often tens of kilobytes of text:
//! rendering it as JSON (escaping every byte) then hashing the text costs
//! about as much again as the hash itself. This serializer feeds the hash
//! directly: every value is written as a tag byte and its bytes, strings
//! as their length and raw bytes, and containers open and close with their
//! own tags, so the encoding is unambiguous (two different values never
//! feed the same bytes) while strings are passed through untouched.
//!
//! Not this: the GP-26 fingerprint of a video request ([`video_request`]),
//! a SHA-256 of the compact JSON text `router_canonical` pins
//! (`VideoRequest::fingerprint_input`), kept for a video's lifetime, whose
//! value must not change.

use serde::Serialize;
use serde::ser::{self, Serializer};
use sha2::{Digest, Sha256};
use std::fmt;

/// A SHA-256 fed part by part; also counts the bytes it was fed.
#[derive(Default, Clone)]
pub struct Fingerprint {
    hash: Sha256,
    len: u64,
}

/// A value's `Serialize` implementation reported an error.
#[derive(Debug)]
pub struct FingerprintError(String);

impl fmt::Display for FingerprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FingerprintError {}

impl ser::Error for FingerprintError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        FingerprintError(msg.to_string())
    }
}

impl Fingerprint {
    /// Feeds `bytes` as one length-prefixed part.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.feed(&(bytes.len() as u64).to_le_bytes());
        self.feed(bytes);
    }

    /// Feeds `value`, serialized; returns how many bytes that fed (about
    /// its JSON length: string contents plus a few bytes per value).
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<u64, FingerprintError> {
        let before = self.len;
        value.serialize(&mut *self)?;
        Ok(self.len - before)
    }

    pub fn finish(self) -> [u8; 32] {
        self.hash.finalize().into()
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.hash.update(bytes);
        self.len += bytes.len() as u64;
    }

    fn tag(&mut self, tag: u8) {
        self.feed(&[tag]);
    }

    /// A fixed-width scalar: its tag, then its bytes.
    fn tagged(&mut self, tag: u8, bytes: &[u8]) -> Result<(), FingerprintError> {
        self.tag(tag);
        self.feed(bytes);
        Ok(())
    }
}

/// Narrow scalars are fed as their widest kind, so `1u8` and `1u64` hash alike.
macro_rules! widen {
    ($($($narrow:ident($ty:ty)),+ => $wide:ident;)+) => {
        $($(
            fn $narrow(self, v: $ty) -> Result<(), FingerprintError> {
                self.$wide(v.into())
            }
        )+)+
    };
}

/// A variant holding a tuple or a struct: its own tag, the variant's name,
/// then the tag that opens its fields.
macro_rules! variant_compound {
    ($method:ident, $tag:literal, $open:literal) => {
        fn $method(
            self,
            _name: &'static str,
            _index: u32,
            variant: &'static str,
            _len: usize,
        ) -> Result<Self, FingerprintError> {
            self.tag($tag);
            self.bytes(variant.as_bytes());
            self.tag($open);
            Ok(self)
        }
    };
}

impl Serializer for &mut Fingerprint {
    type Ok = ();
    type Error = FingerprintError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Result<(), FingerprintError> {
        self.feed(&[b'b', u8::from(v)]);
        Ok(())
    }
    widen! {
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32) => serialize_i64;
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32) => serialize_u64;
        serialize_f32(f32) => serialize_f64;
    }
    fn serialize_i64(self, v: i64) -> Result<(), FingerprintError> {
        self.tagged(b'i', &v.to_le_bytes())
    }
    fn serialize_i128(self, v: i128) -> Result<(), FingerprintError> {
        self.tagged(b'I', &v.to_le_bytes())
    }
    fn serialize_u64(self, v: u64) -> Result<(), FingerprintError> {
        self.tagged(b'u', &v.to_le_bytes())
    }
    fn serialize_u128(self, v: u128) -> Result<(), FingerprintError> {
        self.tagged(b'U', &v.to_le_bytes())
    }
    fn serialize_f64(self, v: f64) -> Result<(), FingerprintError> {
        self.tagged(b'f', &v.to_bits().to_le_bytes())
    }
    fn serialize_char(self, v: char) -> Result<(), FingerprintError> {
        self.tagged(b'c', &u32::from(v).to_le_bytes())
    }
    fn serialize_str(self, v: &str) -> Result<(), FingerprintError> {
        self.tag(b's');
        self.bytes(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), FingerprintError> {
        self.tag(b'y');
        self.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), FingerprintError> {
        self.tag(b'n');
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), FingerprintError> {
        self.tag(b'S');
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), FingerprintError> {
        self.tag(b'0');
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), FingerprintError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), FingerprintError> {
        self.tag(b'v');
        self.bytes(variant.as_bytes());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), FingerprintError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), FingerprintError> {
        self.tag(b'V');
        self.bytes(variant.as_bytes());
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, FingerprintError> {
        self.tag(b'[');
        Ok(self)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, FingerprintError> {
        self.tag(b'(');
        Ok(self)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self, FingerprintError> {
        self.serialize_tuple(len)
    }
    variant_compound!(serialize_tuple_variant, b'T', b'(');
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, FingerprintError> {
        self.tag(b'{');
        Ok(self)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, FingerprintError> {
        self.tag(b'{');
        Ok(self)
    }
    variant_compound!(serialize_struct_variant, b'W', b'{');
}

/// A sequence-like compound: its elements in order, then `close`.
macro_rules! sequence_like {
    ($trait:ident, $method:ident, $close:literal) => {
        impl ser::$trait for &mut Fingerprint {
            type Ok = ();
            type Error = FingerprintError;
            fn $method<T: Serialize + ?Sized>(
                &mut self,
                value: &T,
            ) -> Result<(), FingerprintError> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), FingerprintError> {
                self.tag($close);
                Ok(())
            }
        }
    };
}

sequence_like!(SerializeSeq, serialize_element, b']');
sequence_like!(SerializeTuple, serialize_element, b')');
sequence_like!(SerializeTupleStruct, serialize_field, b')');
sequence_like!(SerializeTupleVariant, serialize_field, b')');

/// A struct-like compound: each field's name and value, then `}`.
macro_rules! struct_like {
    ($trait:ident) => {
        impl ser::$trait for &mut Fingerprint {
            type Ok = ();
            type Error = FingerprintError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), FingerprintError> {
                self.tag(b'k');
                self.bytes(key.as_bytes());
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), FingerprintError> {
                self.tag(b'}');
                Ok(())
            }
        }
    };
}

struct_like!(SerializeStruct);
struct_like!(SerializeStructVariant);

impl ser::SerializeMap for &mut Fingerprint {
    type Ok = ();
    type Error = FingerprintError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), FingerprintError> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), FingerprintError> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), FingerprintError> {
        self.tag(b'}');
        Ok(())
    }
}

/// The GP-26 fingerprint of a video request: the lowercase hex SHA-256 of
/// its normalized text.
pub fn video_request(request: &router_canonical::VideoRequest) -> String {
    format!("{:x}", Sha256::digest(request.fingerprint_input()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest(value: &serde_json::Value) -> [u8; 32] {
        let mut d = Fingerprint::default();
        d.value(value).unwrap();
        d.finish()
    }

    #[test]
    fn equal_values_hash_alike_and_different_ones_apart() {
        let a = json!({"role": "system", "content": [{"type": "text", "text": "hi"}]});
        assert_eq!(digest(&a), digest(&a.clone()));
        // Shifting bytes between neighbours, or between a key and a value,
        // changes the hash.
        let pairs = [
            (json!(["ab", "c"]), json!(["a", "bc"])),
            (json!({"ab": "c"}), json!({"a": "bc"})),
            (json!([["a"], "b"]), json!([["a", "b"]])),
            (json!("1"), json!(1)),
            (json!(null), json!([])),
            (json!([]), json!({})),
        ];
        for (x, y) in pairs {
            assert_ne!(digest(&x), digest(&y), "{x} vs {y}");
        }
    }

    #[test]
    fn counts_about_the_json_length_of_text() {
        let text = "x".repeat(10_000);
        let mut d = Fingerprint::default();
        let fed = d.value(&json!([{"text": text}])).unwrap();
        assert!((10_000..10_100).contains(&fed), "{fed}");
    }

    /// The value is SHA-256 of the stream the module documents (a tag, then
    /// little-endian lengths and raw bytes): prompt-cache affinity's rows and
    /// the response cache's are keyed by it, so changing the encoding
    /// changes every key.
    #[test]
    fn the_value_is_the_sha256_of_the_tagged_stream() {
        let text = "y".repeat(100);
        let value = json!({"a": [true, 7, null, text]});
        let mut stream = vec![b'{', b's'];
        stream.extend(1u64.to_le_bytes());
        stream.push(b'a');
        stream.extend([b'[', b'b', 1, b'u']);
        stream.extend(7u64.to_le_bytes());
        stream.extend([b'0', b's']);
        stream.extend(100u64.to_le_bytes());
        stream.extend(text.as_bytes());
        stream.extend([b']', b'}']);
        let expected: [u8; 32] = Sha256::digest(&stream).into();
        assert_eq!(digest(&value), expected);
        let mut parts = Fingerprint::default();
        parts.bytes(&[1; 70]);
        parts.bytes(b"z");
        let mut stream = 70u64.to_le_bytes().to_vec();
        stream.extend([1; 70]);
        stream.extend(1u64.to_le_bytes());
        stream.push(b'z');
        assert_eq!(parts.finish(), <[u8; 32]>::from(Sha256::digest(&stream)));
    }

    #[test]
    fn parts_are_length_prefixed() {
        let of = |parts: &[&[u8]]| {
            let mut d = Fingerprint::default();
            for part in parts {
                d.bytes(part);
            }
            d.finish()
        };
        assert_ne!(of(&[b"ab", b"c"]), of(&[b"a", b"bc"]));
    }

    /// The video fingerprint is stored for a video's lifetime (GP-26): its
    /// value for a pinned request must never change.
    #[test]
    fn the_video_fingerprint_is_a_stable_hex_sha256() {
        let request = router_canonical::VideoRequest {
            model: "vendor/vid".into(),
            prompt: "a cat".into(),
            mode: "references".into(),
            resolution: "720p".into(),
            duration_seconds: 5,
            aspect_ratio: None,
            references: router_canonical::VideoReferences::default(),
            client_task_id: "job-1".into(),
        };
        // SHA-256 of `["video-request/v1",{"model":"vendor/vid","prompt":"a cat",
        // "mode":"references","resolution":"720p","duration_seconds":5,
        // "aspect_ratio":null,"references":{"images":[],"videos":[],"audios":[]},
        // "client_task_id":"job-1"}]` (no spaces), computed outside Rust.
        assert_eq!(
            video_request(&request),
            "32630da655e77b7c4883799b6083b5df734c12acb60867d2320f083a2d5b9d22"
        );
    }
}
