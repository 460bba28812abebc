//! A client for the few commands of the Redis serialization protocol
//! (RESP2) the shared cache sends: `AUTH`, `SELECT`, `GET`, `SET` with `PX`
//! (and `NX`), `DEL`. Valkey and Redis both speak it.
//!
//! Everything read is bounded: a line at most [`MAX_LINE`] bytes, a bulk
//! string at most the caller's limit. A store that others can write to must
//! not make a replica allocate what it says.

use std::io;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Longest status, error or length line read.
const MAX_LINE: usize = 512;

/// One reply, of the kinds these commands give.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`
    Status(String),
    /// `:1`
    Integer(i64),
    /// `$n` and its bytes; `$-1` is none (a missing key, a refused `NX`).
    Bulk(Option<Vec<u8>>),
}

/// Why a command gave no reply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RespError {
    #[error("the store: {0}")]
    Io(#[from] io::Error),
    /// The store's own error reply (`-ERR ...`, `-NOAUTH ...`).
    #[error("the store refused: {0}")]
    Refused(String),
    #[error("the store's reply is not RESP2: {0}")]
    Protocol(&'static str),
    #[error("the store's reply of {len} bytes is over the {max}-byte bound")]
    TooLarge { len: usize, max: usize },
}

/// A connection: any byte stream (TCP, or TLS over it).
pub(crate) struct Connection<S> {
    stream: BufReader<S>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Connection<S> {
    pub(crate) fn new(stream: S) -> Connection<S> {
        Connection {
            stream: BufReader::new(stream),
        }
    }

    /// Sends `args` as one command and reads its reply; a bulk reply longer
    /// than `max_bulk` is an error (and the connection is not to be reused).
    pub(crate) async fn command(
        &mut self,
        args: &[&[u8]],
        max_bulk: usize,
    ) -> Result<Reply, RespError> {
        let stream = self.stream.get_mut();
        stream.write_all(&encode(args)).await?;
        stream.flush().await?;
        self.reply(max_bulk).await
    }

    async fn reply(&mut self, max_bulk: usize) -> Result<Reply, RespError> {
        let line = self.line().await?;
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Ok(Reply::Status(rest.to_string())),
            "-" => Err(RespError::Refused(rest.to_string())),
            ":" => rest
                .parse()
                .map(Reply::Integer)
                .map_err(|_| RespError::Protocol("an integer reply that is no integer")),
            "$" => self.bulk(rest, max_bulk).await,
            _ => Err(RespError::Protocol(
                "a reply of a kind these commands never give",
            )),
        }
    }

    async fn bulk(&mut self, len: &str, max: usize) -> Result<Reply, RespError> {
        if len == "-1" {
            return Ok(Reply::Bulk(None));
        }
        let len: usize = len
            .parse()
            .map_err(|_| RespError::Protocol("a bulk length that is no length"))?;
        if len > max {
            return Err(RespError::TooLarge { len, max });
        }
        let mut bytes = vec![0; len + 2];
        self.stream.read_exact(&mut bytes).await?;
        if !bytes.ends_with(b"\r\n") {
            return Err(RespError::Protocol("a bulk string not ended by CRLF"));
        }
        bytes.truncate(len);
        Ok(Reply::Bulk(Some(bytes)))
    }

    /// One CRLF-ended line, without its CRLF, at most [`MAX_LINE`] bytes.
    async fn line(&mut self) -> Result<String, RespError> {
        let mut line = Vec::new();
        while !line.ends_with(b"\n") {
            if line.len() > MAX_LINE + 2 {
                return Err(RespError::Protocol("a line longer than its bound"));
            }
            let buf = self.stream.fill_buf().await?;
            if buf.is_empty() {
                return Err(RespError::Io(io::ErrorKind::UnexpectedEof.into()));
            }
            let take = buf
                .iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| i + 1);
            line.extend_from_slice(&buf[..take]);
            self.stream.consume(take);
        }
        if line.len() > MAX_LINE + 2 || !line.ends_with(b"\r\n") || line.len() == 2 {
            return Err(RespError::Protocol(
                "a line over its bound, or not CRLF-ended, or empty",
            ));
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(|_| RespError::Protocol("a line that is not UTF-8"))
    }
}

/// `args` as a RESP array of bulk strings.
fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, DuplexStream};

    /// A connection whose store answers `replies` (whatever is sent). The
    /// store's end stays open, so a short reply waits rather than ends.
    async fn answering(replies: &[u8]) -> (Connection<DuplexStream>, DuplexStream) {
        let (client, mut server) = duplex(64 << 10);
        server.write_all(replies).await.expect("write");
        (Connection::new(client), server)
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&[b"SET", b"k", b"v\r\n", b"PX", b"60000"]),
            b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$2\r\nPX\r\n$5\r\n60000\r\n"
        );
    }

    #[tokio::test]
    async fn replies_of_each_kind() {
        let (mut c, _store) =
            answering(b"+OK\r\n:1\r\n$5\r\nab\r\nc\r\n$-1\r\n-ERR wrong\r\n$0\r\n\r\n").await;
        let get: &[&[u8]] = &[b"GET", b"k"];
        assert_eq!(
            c.command(get, 100).await.expect("ok"),
            Reply::Status("OK".into())
        );
        assert_eq!(c.command(get, 100).await.expect("int"), Reply::Integer(1));
        assert_eq!(
            c.command(get, 100).await.expect("bulk"),
            Reply::Bulk(Some(b"ab\r\nc".to_vec())),
            "a bulk string is binary: its CRLF is data"
        );
        assert_eq!(c.command(get, 100).await.expect("nil"), Reply::Bulk(None));
        assert!(
            matches!(c.command(get, 100).await, Err(RespError::Refused(e)) if e == "ERR wrong")
        );
        assert_eq!(
            c.command(get, 100).await.expect("empty"),
            Reply::Bulk(Some(vec![]))
        );
    }

    /// A store that others can write cannot make a replica allocate what
    /// it says, nor read a line without end.
    #[tokio::test]
    async fn what_is_read_is_bounded() {
        let (mut c, _store) = answering(b"$4294967296\r\n").await;
        assert!(matches!(
            c.command(&[b"GET", b"k"], 1024).await,
            Err(RespError::TooLarge { max: 1024, .. })
        ));
        let long = format!("+{}\r\n", "x".repeat(MAX_LINE + 10));
        let (mut c, _store) = answering(long.as_bytes()).await;
        assert!(matches!(
            c.command(&[b"PING"], 1024).await,
            Err(RespError::Protocol(_))
        ));
        for bad in [&b"*1\r\n"[..], b"$3\r\nabcd\r\n", b":x\r\n", b"\r\n"] {
            let (mut c, _store) = answering(bad).await;
            assert!(
                matches!(
                    c.command(&[b"GET"], 1024).await,
                    Err(RespError::Protocol(_))
                ),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[tokio::test]
    async fn a_closed_store_is_an_io_error() {
        let (client, server) = duplex(1024);
        drop(server);
        let mut c = Connection::new(client);
        assert!(matches!(
            c.command(&[b"GET"], 1).await,
            Err(RespError::Io(_))
        ));
    }
}
