//! Panics as log lines: one error line through `tracing` per panic (one
//! JSON object when log lines are JSON), naming the request whose handler
//! panicked when there was one.

use uuid::Uuid;

tokio::task_local! {
    /// The id of the request whose handler runs in this task (set by
    /// `dispatch`), for the panic hook.
    static CURRENT_REQUEST: Uuid;
}

/// Runs `handler` as request `request_id`'s: a panic inside it is logged
/// with that id (see [`install_panic_hook`]).
pub async fn for_request<F: std::future::Future>(request_id: Uuid, handler: F) -> F::Output {
    CURRENT_REQUEST.scope(request_id, handler).await
}

/// Logs every panic as one error line through `tracing` (so one JSON
/// object when log lines are JSON, issue 30: it was multi-line text outside
/// the JSON stream), with the request id when the panic happened in a
/// request's handler, the location, and the backtrace when
/// `RUST_BACKTRACE` asks for one.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(not text)".to_owned());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
        let request_id = CURRENT_REQUEST.try_with(|id| *id).ok();
        let backtrace = std::backtrace::Backtrace::capture();
        let backtrace = (backtrace.status() == std::backtrace::BacktraceStatus::Captured)
            .then(|| backtrace.to_string());
        tracing::error!(
            target: "router::panic",
            request_id = request_id.map(tracing::field::display),
            location = location.as_deref(),
            panic = %message,
            backtrace = backtrace.as_deref(),
            "panic"
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut out) = self.0.lock() {
                out.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Issue 30: a panic in a request's handler is one JSON line with the
    /// request's id, its message and location; no plain text.
    #[test]
    fn a_panic_is_one_json_line_with_the_request_id() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(move || writer.clone())
            .finish();
        install_panic_hook();
        let request_id = Uuid::now_v7();
        tracing::subscriber::with_default(subscriber, || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let outcome = runtime.block_on(async {
                let handler = for_request(request_id, async {
                    panic!("the handler broke\non two lines");
                });
                futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(handler)).await
            });
            assert!(outcome.is_err());
        });
        let _ = std::panic::take_hook();
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(line["level"], "ERROR");
        assert_eq!(line["target"], "router::panic");
        assert_eq!(line["fields"]["request_id"], request_id.to_string());
        assert_eq!(line["fields"]["panic"], "the handler broke\non two lines");
        assert!(
            line["fields"]["location"]
                .as_str()
                .unwrap()
                .contains("panic.rs"),
            "{line}"
        );
    }
}
