//! One JSON request over HTTP/1.1 on a connection of its own — what etcd's gRPC gateway (its
//! `/v3/...` JSON API) needs, without a gRPC stack: the build then needs no `protoc`, and a
//! killed server or a dropped connection costs one call, never a shared channel's state.
//!
//! `Connection: close`, so the answer ends where the stream ends; a streaming call (lease
//! keep-alive) answers one message for the one it was sent and then ends too, in chunks.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Why a request got no answer to read.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address is not `http://host:port`.
    #[error("not an http://host:port address: {0}")]
    Address(String),
    /// Connecting, sending or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No whole answer within the time allowed.
    #[error("no answer within {0} ms")]
    Timeout(u64),
    /// The server answered something other than 200 and JSON.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status code (0: no status line).
        status: u16,
        /// What it said.
        body: String,
    },
    /// The body was not JSON.
    #[error("not JSON ({0}): {1}")]
    Json(serde_json::Error, String),
}

/// POSTs `body` to `base` + `path` and reads the JSON answer, all within `timeout`.
pub async fn post(
    base: &str,
    path: &str,
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<serde_json::Value, HttpError> {
    let host = base
        .strip_prefix("http://")
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| h.contains(':'))
        .ok_or_else(|| HttpError::Address(base.to_string()))?;
    let body = body.to_string();
    let ask = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut s = tokio::net::TcpStream::connect(host).await?;
        s.write_all(ask.as_bytes()).await?;
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HttpError::Timeout(timeout.as_millis() as u64))??;
    parse(&answer)
}

/// The JSON of a whole HTTP answer.
fn parse(answer: &[u8]) -> Result<serde_json::Value, HttpError> {
    let text = String::from_utf8_lossy(answer);
    let bad = |status: u16, body: &str| HttpError::Status {
        status,
        body: body.trim().to_string(),
    };
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Err(bad(0, &text));
    };
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .unwrap_or(0);
    let chunked = lines.any(|l| {
        l.to_ascii_lowercase()
            .replace(' ', "")
            .starts_with("transfer-encoding:chunked")
    });
    let body = if chunked {
        dechunk(body).ok_or_else(|| bad(status, body))?
    } else {
        body.to_string()
    };
    if status != 200 {
        return Err(bad(status, &body));
    }
    serde_json::from_str(body.trim()).map_err(|e| HttpError::Json(e, body.trim().to_string()))
}

/// A chunked body's content (`size CRLF data CRLF … 0 CRLF CRLF`), or `None` if cut short.
fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_and_a_chunked_answer_read_alike() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"a\":\"1\"}";
        assert_eq!(parse(plain).unwrap(), serde_json::json!({"a": "1"}));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n5\r\n:\"1\"}\r\n0\r\n\r\n";
        assert_eq!(parse(chunked).unwrap(), serde_json::json!({"a": "1"}));
    }

    #[test]
    fn a_refusal_or_a_cut_answer_is_an_error_with_what_was_said() {
        let refused = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 9\r\n\r\n{\"e\":\"x\"}";
        assert_eq!(
            parse(refused).unwrap_err().to_string(),
            "HTTP 400: {\"e\":\"x\"}"
        );
        let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"a\"";
        assert!(matches!(
            parse(cut),
            Err(HttpError::Status { status: 200, .. })
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200"),
            Err(HttpError::Status { status: 0, .. })
        ));
    }
}
