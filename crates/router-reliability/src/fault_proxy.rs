//! The suite's own TCP fault proxy (RELIABILITY.md §4: no toxiproxy here):
//! between the router and PostgreSQL (the outage parts) or a supplier (the
//! fault matrix). The path can be up, cut (every connection closed, new
//! ones closed at once) or black-holed (connections accepted, nothing
//! forwarded either way; what was sent is delivered once the path heals, as
//! TCP's retransmission would).

use anyhow::Result;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Up,
    /// Every connection cut, new ones refused (closed at once).
    Cut,
    /// Connections accepted, nothing forwarded in either direction.
    BlackHole,
}

/// A proxy to `upstream` whose path can be cut or black-holed.
pub struct FaultProxy {
    pub port: u16,
    path: tokio::sync::watch::Sender<Path>,
}

impl FaultProxy {
    pub async fn start(upstream: String, initial: Path) -> Result<FaultProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let (path, watch) = tokio::sync::watch::channel(initial);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if *watch.borrow() == Path::Cut {
                    drop(inbound);
                    continue;
                }
                let upstream = upstream.clone();
                let watch = watch.clone();
                tokio::spawn(async move {
                    // A connection made in a black hole waits for the path.
                    let mut wait = watch.clone();
                    if wait.wait_for(|p| *p != Path::BlackHole).await.is_err()
                        || *wait.borrow() == Path::Cut
                    {
                        return;
                    }
                    let Ok(outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (in_read, in_write) = inbound.into_split();
                    let (out_read, out_write) = outbound.into_split();
                    tokio::select! {
                        _ = pump(in_read, out_write, watch.clone()) => {}
                        _ = pump(out_read, in_write, watch) => {}
                    }
                });
            }
        });
        Ok(FaultProxy { port, path })
    }

    pub fn set(&self, path: Path) {
        self.path.send_replace(path);
    }
}

/// Copies `from` to `to` while the path is up; holds back (reads nothing)
/// while it is black-holed; ends when it is cut or either side closes.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut path: tokio::sync::watch::Receiver<Path>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let now = *path.borrow_and_update();
        match now {
            Path::Cut => return,
            Path::BlackHole => {
                if path.changed().await.is_err() {
                    return;
                }
            }
            Path::Up => {
                tokio::select! {
                    read = from.read(&mut buf) => match read {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if to.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    },
                    changed = path.changed() => if changed.is_err() { return },
                }
            }
        }
    }
}
