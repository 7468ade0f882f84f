//! A tiny SMTP server that accepts every message and keeps it in memory:
//! the router's outgoing mail (sign-in links, digests) in tests and in
//! `cargo xtask demo`, without a real mail server.
//!
//! It speaks just enough of RFC 5321 for a well-behaved client (lettre):
//! EHLO/HELO, MAIL, RCPT, DATA (with dot-unstuffing), RSET, NOOP, QUIT. No
//! TLS, no authentication: listen on loopback only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One message as the sink received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMail {
    /// The envelope sender (`MAIL FROM`).
    pub from: String,
    /// The envelope recipients (`RCPT TO`).
    pub to: Vec<String>,
    /// The message as sent: headers, blank line, body.
    pub data: String,
}

impl ReceivedMail {
    /// A header's value (first occurrence, case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as text, quoted-printable decoded when the message says so.
    pub fn body_text(&self) -> String {
        let body = self
            .data
            .split_once("\r\n\r\n")
            .map_or("", |(_, body)| body);
        let quoted = self
            .header("content-transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("quoted-printable"));
        if quoted {
            decode_quoted_printable(body)
        } else {
            body.to_owned()
        }
    }
}

fn decode_quoted_printable(text: &str) -> String {
    let joined = text.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The running sink; stops when dropped.
pub struct SmtpSink {
    addr: SocketAddr,
    mail: Arc<Mutex<Vec<ReceivedMail>>>,
    arrived: Arc<Notify>,
    /// Replies the next `RCPT` commands get instead of `250` (tests of
    /// refused and deferred mail).
    refusals: Arc<Mutex<VecDeque<&'static str>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SmtpSink {
    pub async fn start(addr: SocketAddr) -> std::io::Result<SmtpSink> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let mail = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let refusals = Arc::new(Mutex::new(VecDeque::new()));
        let (m, a, r) = (mail.clone(), arrived.clone(), refusals.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (m, a, r) = (m.clone(), a.clone(), r.clone());
                tokio::spawn(async move {
                    let _ = session(stream, m, a, r).await;
                });
            }
        });
        Ok(SmtpSink {
            addr,
            mail,
            arrived,
            refusals,
            task,
        })
    }

    /// The next recipient is refused for good (`550`).
    pub fn refuse_next(&self) {
        if let Ok(mut r) = self.refusals.lock() {
            r.push_back("550 mailbox unavailable\r\n");
        }
    }

    /// The next recipient is deferred (`451`, try again later).
    pub fn defer_next(&self) {
        if let Ok(mut r) = self.refusals.lock() {
            r.push_back("451 try again later\r\n");
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give the router (`ROUTER_SMTP_URL`).
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Every message received so far, oldest first.
    pub fn received(&self) -> Vec<ReceivedMail> {
        self.mail.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Waits (at most `timeout`) until `count` messages have arrived, and
    /// returns what has arrived by then.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<ReceivedMail> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.arrived.notified();
            let mail = self.received();
            if mail.len() >= count {
                return mail;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.received();
            }
        }
    }
}

/// The longest command or data line accepted (RFC 5321 allows 1,000).
const MAX_LINE: usize = 4096;

async fn session(
    stream: TcpStream,
    mail: Arc<Mutex<Vec<ReceivedMail>>>,
    arrived: Arc<Notify>,
    refusals: Arc<Mutex<VecDeque<&'static str>>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 smtp-sink ESMTP ready\r\n").await?;
    let mut from = String::new();
    let mut to = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 || line.len() > MAX_LINE {
            return Ok(());
        }
        let command = line.trim_end();
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250 smtp-sink\r\n",
            "MAIL" => {
                from = address(command);
                to.clear();
                b"250 OK\r\n"
            }
            "RCPT" => match refusals.lock().ok().and_then(|mut r| r.pop_front()) {
                Some(refusal) => refusal.as_bytes(),
                None => {
                    to.push(address(command));
                    b"250 OK\r\n"
                }
            },
            "DATA" => {
                write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
                let mut data = String::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await? == 0 || line.len() > MAX_LINE {
                        return Ok(());
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').unwrap_or(&line));
                }
                if let Ok(mut m) = mail.lock() {
                    m.push(ReceivedMail {
                        from: std::mem::take(&mut from),
                        to: std::mem::take(&mut to),
                        data,
                    });
                }
                arrived.notify_waiters();
                b"250 OK queued\r\n"
            }
            "RSET" => {
                from.clear();
                to.clear();
                b"250 OK\r\n"
            }
            "NOOP" => b"250 OK\r\n",
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => b"502 command not implemented\r\n",
        };
        write.write_all(reply).await?;
    }
}

/// The address inside `<…>` of a MAIL or RCPT command.
fn address(command: &str) -> String {
    command
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map_or(String::new(), |(addr, _)| addr.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_quoted_printable_soft_breaks_and_escapes() {
        assert_eq!(
            decode_quoted_printable("http://x/a?token=3Dab=\r\ncd\r\n"),
            "http://x/a?token=abcd\r\n"
        );
    }

    #[tokio::test]
    async fn receives_a_message_over_smtp() {
        let sink = SmtpSink::start("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let stream = TcpStream::connect(sink.addr()).await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut expect = async |code: &str| {
            let line = lines.next_line().await.unwrap().unwrap();
            assert!(line.starts_with(code), "{line}");
        };
        expect("220").await;
        for (send, code) in [
            ("EHLO me\r\n", "250"),
            ("MAIL FROM:<a@x.test>\r\n", "250"),
            ("RCPT TO:<b@y.test>\r\n", "250"),
            ("DATA\r\n", "354"),
            ("Subject: hi\r\n\r\n..dot\r\nline\r\n.\r\n", "250"),
            ("QUIT\r\n", "221"),
        ] {
            write.write_all(send.as_bytes()).await.unwrap();
            expect(code).await;
        }
        let mail = sink.wait_for(1, Duration::from_secs(5)).await;
        assert_eq!(mail.len(), 1);
        assert_eq!(mail[0].from, "a@x.test");
        assert_eq!(mail[0].to, vec!["b@y.test"]);
        assert_eq!(mail[0].header("subject"), Some("hi"));
        assert_eq!(mail[0].body_text(), ".dot\r\nline\r\n");
    }
}
