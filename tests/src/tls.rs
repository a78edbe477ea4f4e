//! A certificate authority of the test's own (rcgen) and an HTTPS server with a leaf it signed (tokio-rustls),
//! serving inside a [`NetNs`].
//!
//! The server answers every request with `200` and a short body naming the server name the client asked for, and
//! counts the requests. It runs on a thread of its own inside the namespace, and stops on drop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context as _, Result};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::netns::NetNs;

/// The test's certificate authority.
#[derive(Debug)]
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate and its key.
#[derive(Debug)]
pub struct Leaf {
    /// The chain: the leaf, then the CA.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's key.
    pub key: PrivateKeyDer<'static>,
}

impl TestCa {
    /// A new CA (an ECDSA P-256 key, made now).
    ///
    /// # Errors
    /// rcgen's error.
    pub fn new() -> Result<Self> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "efr test CA");
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Self { issuer })
    }

    /// The CA certificate in PEM, for clients (curl's `--cacert`, `SSL_CERT_FILE`, pip's `--cert`).
    #[must_use]
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA certificate in DER.
    #[must_use]
    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf for `names` signed by this CA.
    ///
    /// # Errors
    /// rcgen's error (a name it cannot put in a certificate).
    pub fn leaf(&self, names: &[&str]) -> Result<Leaf> {
        let params = CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())?;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Leaf {
            chain: vec![cert.der().clone(), self.der()],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    /// A rustls client configuration that trusts this CA only.
    ///
    /// # Errors
    /// rustls refused the CA certificate.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der())?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

/// An HTTPS server in a test's namespace.
#[derive(Debug)]
pub struct TlsServer {
    addr: SocketAddr,
    requests: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsServer {
    /// Starts a server on `addr` (port 0 for any) inside `netns`, with a leaf for `names` signed by `ca`.
    ///
    /// # Errors
    /// The certificate, entering the namespace, or binding failed.
    pub fn start(netns: &NetNs, addr: SocketAddr, ca: &TestCa, names: &[&str]) -> Result<Self> {
        let leaf = ca.leaf(names)?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(leaf.chain, leaf.key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = netns.run(|| std::net::TcpListener::bind(addr))??;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let requests = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let counter = Arc::clone(&requests);
        let thread = std::thread::Builder::new()
            .name("tls-server".into())
            .spawn(move || serve(listener, acceptor, counter, stopped))
            .context("cannot start the server's thread")?;
        Ok(Self {
            addr,
            requests,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens (inside its namespace).
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests answered so far.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    requests: Arc<AtomicU64>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return;
    };
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        loop {
            let stream = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let acceptor = acceptor.clone();
            let requests = Arc::clone(&requests);
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let name = tls.get_ref().1.server_name().unwrap_or("").to_owned();
                let mut head = Vec::new();
                let mut byte = [0_u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                    match tls.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                requests.fetch_add(1, Ordering::SeqCst);
                let body = format!("hello from {name}\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
}
