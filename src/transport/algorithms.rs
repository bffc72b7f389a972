//! Which ciphers and host-key algorithms a connection asks for.

use russh::keys::Algorithm;

/// AES-GCM first where the CPU has AES instructions (ring's AES-GCM then costs a fraction of
/// ChaCha20-Poly1305's CPU per byte, which decides a bulk pull's speed); ChaCha20 first where
/// it does not, as OpenSSH orders them.
pub(super) fn cipher_order() -> &'static [russh::cipher::Name] {
    use russh::cipher::{AES_128_CTR, AES_128_GCM, AES_256_CTR, AES_256_GCM, CHACHA20_POLY1305};
    #[cfg(target_arch = "x86_64")]
    let aes = std::arch::is_x86_feature_detected!("aes")
        && std::arch::is_x86_feature_detected!("pclmulqdq");
    #[cfg(target_arch = "aarch64")]
    let aes = std::arch::is_aarch64_feature_detected!("aes");
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let aes = false;
    if aes {
        &[
            AES_128_GCM,
            AES_256_GCM,
            CHACHA20_POLY1305,
            AES_256_CTR,
            AES_128_CTR,
        ]
    } else {
        &[
            CHACHA20_POLY1305,
            AES_128_GCM,
            AES_256_GCM,
            AES_256_CTR,
            AES_128_CTR,
        ]
    }
}
/// Maps known_hosts key types to the host-key algorithms to ask for, in recorded order.
pub(super) fn preferred_host_key_algorithms(recorded: &[String]) -> Vec<Algorithm> {
    let mut out = Vec::new();
    for name in recorded {
        if name == "ssh-rsa" {
            out.push(Algorithm::Rsa {
                hash: Some(russh::keys::HashAlg::Sha512),
            });
            out.push(Algorithm::Rsa {
                hash: Some(russh::keys::HashAlg::Sha256),
            });
        } else if let Ok(alg) = Algorithm::new(name) {
            out.push(alg);
        }
    }
    out
}
