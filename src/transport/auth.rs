//! Public-key authentication the way OpenSSH does it: agent identities first, then key files.
//! An encrypted key without an agent is a clear error, never a prompt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use russh::client::Handle;
use russh::keys::agent::AgentIdentity;
use russh::keys::agent::client::AgentClient;
use russh::keys::ssh_key::public::KeyData;
use russh::keys::{PrivateKeyWithHashAlg, PublicKey};

use super::error::TransportError;
use super::handler::ClientHandler;

/// Authenticates and returns how ("publickey (agent: comment)", "publickey (file PATH)").
pub async fn authenticate(
    handle: &mut Handle<ClientHandler>,
    user: &str,
    key_files: &[PathBuf],
    identities_only: bool,
) -> Result<String, TransportError> {
    let mut tried: Vec<String> = Vec::new();
    let rsa_hash = handle.best_supported_rsa_hash().await?.flatten();
    // Keys are compared by their key data: the comment differs between a .pub file and an agent.
    let wanted: Vec<KeyData> = key_files.iter().filter_map(|f| public_half(f)).collect();

    let mut agent = match std::env::var_os("SSH_AUTH_SOCK") {
        Some(_) => match AgentClient::connect_env().await {
            Ok(agent) => Some(agent),
            Err(e) => {
                tried.push(format!("ssh-agent unreachable ({e})"));
                None
            }
        },
        None => None,
    };
    let mut agent_keys: Vec<KeyData> = Vec::new();
    if let Some(agent) = agent.as_mut() {
        let identities = agent.request_identities().await.unwrap_or_default();
        for identity in identities {
            let AgentIdentity::PublicKey { key, comment } = identity else {
                continue;
            };
            agent_keys.push(key.key_data().clone());
            if identities_only && !wanted.contains(key.key_data()) {
                continue;
            }
            let label = format!("agent key {}", crate::sanitize::line(&comment, 80));
            let result = handle
                .authenticate_publickey_with(user, key, rsa_hash, agent)
                .await;
            match result {
                Ok(r) if r.success() => return Ok(format!("publickey ({label})")),
                Ok(_) => tried.push(format!("{label} (rejected)")),
                Err(e) => tried.push(format!("{label} ({e})")),
            }
        }
    }

    for path in key_files {
        if !path.exists() {
            continue;
        }
        let shown = path.display();
        match russh::keys::load_secret_key(path, None) {
            Ok(key) => {
                if agent_keys.contains(key.public_key().key_data()) {
                    continue;
                }
                let key = PrivateKeyWithHashAlg::new(Arc::new(key), rsa_hash);
                match handle.authenticate_publickey(user, key).await {
                    Ok(r) if r.success() => return Ok(format!("publickey (file {shown})")),
                    Ok(_) => tried.push(format!("{shown} (rejected)")),
                    Err(e) => tried.push(format!("{shown} ({e})")),
                }
            }
            Err(russh::keys::Error::KeyIsEncrypted) => {
                let in_agent = public_half(path).is_some_and(|k| agent_keys.contains(&k));
                if !in_agent {
                    tried.push(format!(
                        "{shown} is passphrase-protected and no ssh-agent holds it \
                         (run `ssh-add {shown}`; rigwatch never prompts)"
                    ));
                }
            }
            Err(e) => tried.push(format!("{shown} unreadable ({e})")),
        }
    }

    let reason = if tried.is_empty() {
        let looked: Vec<String> = key_files.iter().map(|p| p.display().to_string()).collect();
        format!(
            "no identity to offer: no key file at {} and no ssh-agent (SSH_AUTH_SOCK)",
            if looked.is_empty() {
                "(none configured)".into()
            } else {
                looked.join(", ")
            }
        )
    } else {
        format!("server accepted none of: {}", tried.join("; "))
    };
    Err(TransportError::AuthRefused {
        user: user.to_string(),
        reason,
    })
}

/// The `.pub` beside a key file, used to match agent identities without decrypting the key.
fn public_half(private: &Path) -> Option<KeyData> {
    let mut pub_path = private.as_os_str().to_owned();
    pub_path.push(".pub");
    let text = std::fs::read_to_string(PathBuf::from(pub_path)).ok()?;
    PublicKey::from_openssh(text.trim())
        .ok()
        .map(|k| k.key_data().clone())
}
