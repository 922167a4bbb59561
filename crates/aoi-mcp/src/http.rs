//! The Streamable HTTP transport (`aoi mcp --listen ADDR`): rmcp's tower service under a
//! small hyper server, on loopback unless told otherwise.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::McpServer;

/// Parses `--listen`: `HOST:PORT`, or a bare `PORT` on 127.0.0.1.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>()
        .map_err(|_| format!("`{text}` is not PORT or HOST:PORT (e.g. 8765 or 127.0.0.1:8765)"))
}

/// Binds `addr`; returns the listener and the address actually bound (port 0 picks one).
pub async fn bind(addr: SocketAddr) -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}

/// Serves `server` over Streamable HTTP on `listener` until `cancel` fires. Every path
/// answers (hosts usually use `/mcp`). Requests whose `Host` is not the bound address or a
/// loopback name are refused (DNS rebinding).
pub async fn serve(
    server: McpServer,
    listener: TcpListener,
    cancel: CancellationToken,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !local.ip().is_loopback() {
        hosts.push(local.ip().to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.clone())
        .with_allowed_hosts(hosts);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            () = cancel.cancelled() => return Ok(()),
        };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback() {
        assert_eq!(parse_addr("8765").unwrap().to_string(), "127.0.0.1:8765");
        assert_eq!(parse_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_addr("nowhere").is_err());
    }
}
