//! `nvidia-smi -L`: which GPUs (and MIG slices) the box has, by index, name and UUID.
//!
//! The cheapest way to learn a box's GPUs once per connection; the UUID is what survives a
//! reboot's re-indexing, so samples are matched to GPUs by it.

use super::ParseError;
use super::text::{lines, quoted};
use serde::Serialize;

const PROBE: &str = "nvidia-smi -L";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuListing {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    /// UUIDs of the MIG devices listed under this GPU (`MIG-...`), empty without MIG.
    pub mig_uuids: Vec<String>,
}

/// Parses `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)` lines and the indented
/// `MIG 1g.10gb Device 0: (UUID: MIG-...)` lines that follow a MIG-enabled GPU.
pub fn parse_gpu_list(text: &str) -> Result<Vec<GpuListing>, ParseError> {
    let mut out: Vec<GpuListing> = Vec::new();
    for (line, row) in lines(PROBE, text)? {
        if row == "No devices found." || row == "No devices were found" {
            continue;
        }
        let (head, uuid) = split_uuid(row).ok_or_else(|| {
            let why = format!(
                "expected `GPU <n>: <name> (UUID: ...)`, got {}",
                quoted(row)
            );
            ParseError::new(PROBE, line, why)
        })?;
        if row.starts_with("MIG ") {
            let gpu = out
                .last_mut()
                .ok_or_else(|| ParseError::new(PROBE, line, "MIG device listed before any GPU"))?;
            gpu.mig_uuids.push(uuid.to_owned());
            continue;
        }
        let (index, name) = head
            .strip_prefix("GPU ")
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(n, name)| Some((n.trim().parse::<u32>().ok()?, name.trim())))
            .ok_or_else(|| {
                let why = format!("expected `GPU <n>: <name>`, got {}", quoted(head));
                ParseError::new(PROBE, line, why)
            })?;
        out.push(GpuListing {
            index,
            name: name.to_owned(),
            uuid: uuid.to_owned(),
            mig_uuids: Vec::new(),
        });
    }
    Ok(out)
}

/// Splits `<head> (UUID: <uuid>)` at the last `(UUID: `, since a name could hold parentheses.
fn split_uuid(row: &str) -> Option<(&str, &str)> {
    let (head, tail) = row.rsplit_once("(UUID: ")?;
    let uuid = tail.strip_suffix(')')?.trim();
    (!uuid.is_empty()).then_some((head.trim(), uuid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mig_devices_attach_to_their_gpu_handwritten() {
        let text = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)\n  MIG 1g.5gb      Device  0: \
                    (UUID: MIG-bbbb)\n  MIG 1g.5gb      Device  1: (UUID: MIG-cccc)\n\
                    GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-dddd)\n";
        let gpus = parse_gpu_list(text).expect("parses");
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].mig_uuids, ["MIG-bbbb", "MIG-cccc"]);
        assert_eq!(gpus[1].index, 1);
        assert!(gpus[1].mig_uuids.is_empty());
    }

    #[test]
    fn driver_failure_is_an_error_on_line_1_handwritten() {
        let text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.";
        let err = parse_gpu_list(text).err();
        assert_eq!(err.map(|e| (e.probe, e.line)), Some((PROBE, 1)));
    }

    #[test]
    fn mig_before_gpu_is_an_error_handwritten() {
        let err = parse_gpu_list("\n  MIG 1g.5gb Device 0: (UUID: MIG-x)").err();
        assert_eq!(err.map(|e| e.line), Some(2));
    }
}
