//! A TCP proxy between one holder and its lease server, in this process: the partition nemesis
//! cuts it and heals it. Never the host's network configuration — nothing here needs root, and
//! nothing outlives the run.
//!
//! A cut is a partition as TCP sees one: nothing crosses, in either direction, and nothing is
//! refused or reset — what a side sends waits (the kernel would retransmit it), and crosses once
//! the cut heals. So a request sent during a cut can reach the server long after its client
//! gave up on it, as after a real partition; a connection opened during a cut is accepted and
//! then hears nothing.

use crate::LiveError;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The proxies of a run, on a thread of their own; each holder's cut by its index.
pub struct Proxies {
    cuts: Vec<watch::Sender<bool>>,
    ports: Vec<u16>,
    /// Dropping it ends the thread's runtime, and with it every proxy and connection.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Proxies {
    /// One proxy per upstream address (`host:port`), each on a free loopback port.
    pub fn start(upstreams: &[String]) -> Result<Proxies, LiveError> {
        let mut listeners = Vec::new();
        let mut ports = Vec::new();
        for _ in upstreams {
            let l = std::net::TcpListener::bind("127.0.0.1:0")
                .map_err(|e| LiveError::io("bind a proxy port", e))?;
            l.set_nonblocking(true)
                .map_err(|e| LiveError::io("bind a proxy port", e))?;
            ports.push(
                l.local_addr()
                    .map_err(|e| LiveError::io("bind a proxy port", e))?
                    .port(),
            );
            listeners.push(l);
        }
        let (cuts, watchers): (Vec<_>, Vec<_>) =
            upstreams.iter().map(|_| watch::channel(false)).unzip();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let upstreams = upstreams.to_vec();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LiveError::io("start the proxies' runtime", e))?;
        std::thread::spawn(move || {
            rt.block_on(async move {
                for ((l, up), cut) in listeners.into_iter().zip(upstreams).zip(watchers) {
                    if let Ok(l) = TcpListener::from_std(l) {
                        tokio::spawn(serve(l, Arc::new(up), cut));
                    }
                }
                let _ = stopped.await;
            });
        });
        Ok(Proxies {
            cuts,
            ports,
            _stop: stop,
        })
    }

    /// The port holder `i` connects to.
    pub fn port(&self, i: usize) -> Option<u16> {
        self.ports.get(i).copied()
    }

    /// A handle that cuts (`send(true)`) and heals (`send(false)`) holder `i`'s proxy from
    /// another thread.
    pub fn cutter(&self, i: usize) -> Option<watch::Sender<bool>> {
        self.cuts.get(i).cloned()
    }
}

/// Accepts connections and pumps each to a connection of its own to `up`.
async fn serve(l: TcpListener, up: Arc<String>, cut: watch::Receiver<bool>) {
    while let Ok((down, _)) = l.accept().await {
        let (up, mut cut) = (up.clone(), cut.clone());
        tokio::spawn(async move {
            // Not even the connection crosses a cut.
            healed(&mut cut).await;
            let Ok(upstream) = TcpStream::connect(up.as_str()).await else {
                return;
            };
            let (dr, dw) = down.into_split();
            let (ur, uw) = upstream.into_split();
            tokio::spawn(pump(dr, uw, cut.clone()));
            tokio::spawn(pump(ur, dw, cut));
        });
    }
}

/// Waits until the proxy is not cut.
async fn healed(cut: &mut watch::Receiver<bool>) {
    let _ = cut.wait_for(|c| !*c).await;
}

/// Copies one direction, holding whatever it read while the proxy is cut.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut cut: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        healed(&mut cut).await;
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        healed(&mut cut).await;
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    // The end crosses too, once healed: the other side learns the connection closed.
    healed(&mut cut).await;
    let _ = to.shutdown().await;
}
