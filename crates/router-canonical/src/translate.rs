//! A supplier's streamed reply, bytes in, a client's stream, bytes out: the
//! glue every translating service writes, without any transport.
//!
//! [`FrameDecoder`] splits a supplier's bytes into frames by the codec's
//! [`StreamFraming`] (SSE, or AWS event stream); [`StreamTranslator`] runs
//! those frames through the supplier's [`SupplierStreamDecoder`] and the
//! client's [`ClientStreamEncoder`], and ends the client's stream with its
//! own error frame if the supplier's fails.

use crate::codec::{ClientStreamEncoder, StreamFraming, SupplierCodec, SupplierStreamDecoder};
use crate::error::{ApiError, ErrorCode};
use crate::eventstream::Decoder as AwsDecoder;
use crate::sse::{Decoder as SseDecoder, Frame};
use crate::supplier_error::SupplierError;

/// Splits a supplier's streamed bytes into frames, whatever its framing.
/// Feed chunks as they arrive: a frame split across chunks comes out whole.
#[derive(Debug)]
pub struct FrameDecoder {
    framing: Framing,
}

#[derive(Debug)]
enum Framing {
    Sse(SseDecoder),
    Aws(AwsDecoder),
}

impl FrameDecoder {
    /// A decoder for `framing` (see [`SupplierCodec::stream_framing`]).
    pub fn new(framing: StreamFraming) -> Self {
        let framing = match framing {
            StreamFraming::Sse => Framing::Sse(SseDecoder::default()),
            StreamFraming::AwsEventStream => Framing::Aws(AwsDecoder::default()),
        };
        FrameDecoder { framing }
    }

    /// Append the frames `chunk` completes to `frames`. A malformed or
    /// oversized frame is an [`SupplierError::InvalidReply`].
    pub fn feed(&mut self, chunk: &[u8], frames: &mut Vec<Frame>) -> Result<(), SupplierError> {
        match &mut self.framing {
            Framing::Sse(sse) => sse.feed(chunk, frames).map_err(SupplierError::invalid),
            Framing::Aws(aws) => {
                let mut messages = Vec::new();
                aws.feed(chunk, &mut messages)
                    .map_err(SupplierError::invalid)?;
                for message in messages {
                    frames.push(message.into_frame().map_err(SupplierError::invalid)?);
                }
                Ok(())
            }
        }
    }
}

/// Why a supplier's stream ended without its final event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the supplier's stream ended before its final event")]
pub struct EndedEarly;

/// One supplier stream re-encoded for one client, bytes to bytes.
///
/// ```
/// use router_canonical::translate::StreamTranslator;
/// # use router_canonical::{ClientStreamEncoder, SupplierCodec};
/// # fn relay(supplier: &dyn SupplierCodec, encoder: impl ClientStreamEncoder,
/// #          chunks: Vec<Vec<u8>>) -> Result<Vec<u8>, router_canonical::SupplierError> {
/// let mut translator = StreamTranslator::new(supplier, encoder);
/// let mut out = Vec::new();
/// for chunk in chunks {
///     translator.feed(&chunk, &mut out)?; // send `out` to the client, clear it
/// }
/// translator.finish(&mut out)?;
/// # Ok(out) }
/// ```
pub struct StreamTranslator<E: ClientStreamEncoder> {
    frames: FrameDecoder,
    decoder: Box<dyn SupplierStreamDecoder>,
    encoder: E,
    pending: Vec<Frame>,
    failed: bool,
}

impl<E: ClientStreamEncoder> StreamTranslator<E> {
    /// A translator from `supplier`'s stream (its framing and decoder) to
    /// the client stream `encoder` writes.
    pub fn new(supplier: &dyn SupplierCodec, encoder: E) -> Self {
        StreamTranslator::from_parts(
            FrameDecoder::new(supplier.stream_framing()),
            supplier.stream_decoder(),
            encoder,
        )
    }

    /// A translator from its parts, for a decoder made elsewhere.
    pub fn from_parts(
        frames: FrameDecoder,
        decoder: Box<dyn SupplierStreamDecoder>,
        encoder: E,
    ) -> Self {
        StreamTranslator {
            frames,
            decoder,
            encoder,
            pending: Vec::new(),
            failed: false,
        }
    }

    /// Translate the next chunk of the supplier's bytes, appending the
    /// client's bytes to `out`. If the supplier's stream fails (it reported
    /// an error, or sent something invalid), the client's stream is ended
    /// with its protocol's error frame (the public error of
    /// [`SupplierError::to_api_error`]) and the error returned; later calls
    /// do nothing.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), SupplierError> {
        if self.failed {
            return Ok(());
        }
        let result = self.translate(chunk, out);
        if let Err(error) = &result {
            self.fail(&error.to_api_error(), out);
        }
        result
    }

    fn translate(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), SupplierError> {
        self.frames.feed(chunk, &mut self.pending)?;
        for frame in std::mem::take(&mut self.pending) {
            for event in self.decoder.decode(&frame)? {
                // A `Finish` event writes the client stream's ending.
                self.encoder.event(&event, out);
            }
        }
        Ok(())
    }

    fn fail(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        self.failed = true;
        self.encoder.error(error, out);
    }

    /// Whether the supplier's final event has been translated.
    pub fn is_finished(&self) -> bool {
        self.decoder.is_finished()
    }

    /// The supplier's bytes ended. After a failure [`StreamTranslator::feed`]
    /// reported, nothing more is written. If the final event never came, the
    /// client's stream is ended with an `upstream_error` frame and
    /// [`SupplierError::InvalidReply`] ([`EndedEarly`]) is returned.
    pub fn finish(mut self, out: &mut Vec<u8>) -> Result<(), SupplierError> {
        if self.failed || self.decoder.is_finished() {
            return Ok(());
        }
        self.fail(
            &ApiError::new(
                ErrorCode::UpstreamError,
                "The upstream stream was interrupted.",
            ),
            out,
        );
        Err(SupplierError::invalid(EndedEarly))
    }

    /// The client encoder, for what the caller writes after the stream.
    pub fn into_encoder(self) -> E {
        self.encoder
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{StreamEnd, SupplierTarget};
    use crate::eventstream::Message;
    use crate::supplier_error::SupplierFailure;
    use crate::{Protocol, Request, Response, StopReason, StreamEvent, Usage};

    /// A dialect whose frames are `start`, `stop`, or `error` events, framed
    /// as SSE or AWS event stream.
    struct Toy(StreamFraming);

    struct ToyDecoder {
        finished: bool,
    }

    impl SupplierStreamDecoder for ToyDecoder {
        fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
            match frame.event.as_deref() {
                Some("start") => Ok(vec![StreamEvent::Start {
                    id: frame.data.clone(),
                    model: "m".into(),
                }]),
                Some("stop") => {
                    self.finished = true;
                    Ok(vec![StreamEvent::Finish {
                        stop_reason: StopReason::EndTurn,
                        stop_sequence: None,
                        usage: Usage::default(),
                    }])
                }
                _ => Err(SupplierError::Reported(
                    SupplierFailure::default().kind("overloaded_error"),
                )),
            }
        }

        fn is_finished(&self) -> bool {
            self.finished
        }
    }

    impl SupplierCodec for Toy {
        fn protocol(&self) -> Protocol {
            Protocol::Messages
        }
        fn path(&self) -> &'static str {
            "/toy"
        }
        fn stream_framing(&self) -> StreamFraming {
            self.0
        }
        fn encode_request(&self, _: &Request, _: &SupplierTarget<'_>) -> Result<Vec<u8>, ApiError> {
            Ok(Vec::new())
        }
        fn headers(&self, _: &Request, _: Option<&str>) -> Vec<(&'static str, String)> {
            Vec::new()
        }
        fn decode_response(&self, _: &[u8]) -> Result<Response, SupplierError> {
            Err(SupplierError::Reported(SupplierFailure::default()))
        }
        fn decode_error(
            &self,
            status: u16,
            headers: &dyn crate::header::HeaderSource,
            _: &[u8],
        ) -> SupplierError {
            SupplierError::Reported(SupplierFailure::from_reply(status, headers))
        }
        fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
            Box::new(ToyDecoder { finished: false })
        }
    }

    /// Writes one line per event: `start <id>`, `finish`, `error <code>`.
    struct Lines;

    impl ClientStreamEncoder for Lines {
        fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
            match event {
                StreamEvent::Start { id, .. } => {
                    out.extend_from_slice(format!("start {id}\n").as_bytes())
                }
                StreamEvent::Finish { .. } => out.extend_from_slice(b"finish\n"),
                _ => {}
            }
        }
        fn finish(&mut self, _: &StreamEnd<'_>, out: &mut Vec<u8>) {
            out.extend_from_slice(b"finish\n");
        }
        fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
            out.extend_from_slice(format!("error {}\n", error.code).as_bytes());
        }
    }

    fn sse(events: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (event, data) in events {
            crate::sse::encode(Some(event), data, &mut out);
        }
        out
    }

    fn aws(events: &[(&str, &str)]) -> Vec<u8> {
        events
            .iter()
            .flat_map(|(event, data)| Message::event(event, data.as_bytes()).encode())
            .collect()
    }

    /// Byte by byte or whole, SSE or AWS event stream: the same client bytes.
    #[test]
    fn a_stream_is_translated_whatever_its_chunks_and_framing() {
        let events = [("start", "r1"), ("stop", "")];
        for (framing, bytes) in [
            (StreamFraming::Sse, sse(&events)),
            (StreamFraming::AwsEventStream, aws(&events)),
        ] {
            for chunk in [1, 5, bytes.len()] {
                let mut translator = StreamTranslator::new(&Toy(framing), Lines);
                let mut out = Vec::new();
                for piece in bytes.chunks(chunk) {
                    translator.feed(piece, &mut out).unwrap();
                }
                assert!(translator.is_finished());
                translator.finish(&mut out).unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), "start r1\nfinish\n");
            }
        }
    }

    #[test]
    fn a_failed_stream_ends_with_the_clients_error_frame_once() {
        let mut translator = StreamTranslator::new(&Toy(StreamFraming::Sse), Lines);
        let mut out = Vec::new();
        let error = translator
            .feed(&sse(&[("start", "r1"), ("error", "{}")]), &mut out)
            .unwrap_err();
        assert!(error.retryable(), "{error}");
        translator.feed(&sse(&[("stop", "")]), &mut out).unwrap();
        translator.finish(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "start r1\nerror upstream_unavailable\n"
        );
    }

    #[test]
    fn a_stream_cut_short_is_an_invalid_reply() {
        let mut translator = StreamTranslator::new(&Toy(StreamFraming::Sse), Lines);
        let mut out = Vec::new();
        translator.feed(&sse(&[("start", "r1")]), &mut out).unwrap();
        let error = translator.finish(&mut out).unwrap_err();
        assert_eq!(error.category(), crate::SupplierErrorCategory::InvalidReply);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "start r1\nerror upstream_error\n"
        );
    }

    #[test]
    fn bad_framing_is_an_invalid_reply() {
        let mut frames = FrameDecoder::new(StreamFraming::AwsEventStream);
        let error = frames.feed(&[0xff; 16], &mut Vec::new()).unwrap_err();
        assert!(matches!(error, SupplierError::InvalidReply(_)), "{error}");
    }
}
