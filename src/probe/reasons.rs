//! Clock event reasons (formerly "throttle reasons"): why the SM clock is below its max.
//!
//! GPU-Util says 100 % for a kernel that is starved by a power cap; this bitmask is what says
//! so. Bits and wording follow NVML's `nvmlClocksEventReason*` constants and nvidia-smi's
//! `--help-query-gpu` text (tests/fixtures/h100/nvsmi_help_query.txt).

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// One reason the driver is holding the clocks down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockEventReason {
    GpuIdle,
    ApplicationsClocksSetting,
    SwPowerCap,
    HwSlowdown,
    SyncBoost,
    SwThermalSlowdown,
    HwThermalSlowdown,
    HwPowerBrakeSlowdown,
    DisplayClockSetting,
}

/// (reason, NVML bit, nvidia-smi's field suffix, label for people).
const TABLE: &[(ClockEventReason, u64, &str, &str)] = &[
    (ClockEventReason::GpuIdle, 0x1, "gpu_idle", "GPU idle"),
    (
        ClockEventReason::ApplicationsClocksSetting,
        0x2,
        "applications_clocks_setting",
        "Applications clocks setting",
    ),
    (
        ClockEventReason::SwPowerCap,
        0x4,
        "sw_power_cap",
        "SW power cap",
    ),
    (
        ClockEventReason::HwSlowdown,
        0x8,
        "hw_slowdown",
        "HW slowdown",
    ),
    (
        ClockEventReason::SyncBoost,
        0x10,
        "sync_boost",
        "Sync boost",
    ),
    (
        ClockEventReason::SwThermalSlowdown,
        0x20,
        "sw_thermal_slowdown",
        "SW thermal slowdown",
    ),
    (
        ClockEventReason::HwThermalSlowdown,
        0x40,
        "hw_thermal_slowdown",
        "HW thermal slowdown",
    ),
    (
        ClockEventReason::HwPowerBrakeSlowdown,
        0x80,
        "hw_power_brake_slowdown",
        "HW power brake slowdown",
    ),
    (
        ClockEventReason::DisplayClockSetting,
        0x100,
        "display_clock_setting",
        "Display clock setting",
    ),
];

impl ClockEventReason {
    pub const ALL: [ClockEventReason; 9] = [
        ClockEventReason::GpuIdle,
        ClockEventReason::ApplicationsClocksSetting,
        ClockEventReason::SwPowerCap,
        ClockEventReason::HwSlowdown,
        ClockEventReason::SyncBoost,
        ClockEventReason::SwThermalSlowdown,
        ClockEventReason::HwThermalSlowdown,
        ClockEventReason::HwPowerBrakeSlowdown,
        ClockEventReason::DisplayClockSetting,
    ];

    fn row(self) -> (u64, &'static str, &'static str) {
        TABLE
            .iter()
            .find(|(r, ..)| *r == self)
            .map_or((0, "", ""), |(_, bit, field, label)| (*bit, *field, *label))
    }

    /// NVML's bit for this reason.
    pub fn bit(self) -> u64 {
        self.row().0
    }

    /// The label people read, e.g. "SW power cap".
    pub fn label(self) -> &'static str {
        self.row().2
    }

    /// The reason named by a per-reason query field suffix (`sw_power_cap`).
    pub fn from_field_suffix(suffix: &str) -> Option<Self> {
        TABLE
            .iter()
            .find(|(_, _, f, _)| *f == suffix)
            .map(|(r, ..)| *r)
    }
}

/// The `clocks_event_reasons.active` bitmask, kept whole so bits newer than this table survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockEventReasons {
    pub mask: u64,
}

impl ClockEventReasons {
    /// Parses nvidia-smi's `0x0000000000000004`; `None` if it is not that shape.
    pub fn from_hex(text: &str) -> Option<Self> {
        let t = text.trim();
        let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
        u64::from_str_radix(digits, 16)
            .ok()
            .map(|mask| ClockEventReasons { mask })
    }

    pub fn contains(self, reason: ClockEventReason) -> bool {
        self.mask & reason.bit() != 0
    }

    /// The known reasons that are active, in NVML bit order.
    pub fn active(self) -> Vec<ClockEventReason> {
        ClockEventReason::ALL
            .into_iter()
            .filter(|r| self.contains(*r))
            .collect()
    }

    /// Active bits this table has no name for (a newer driver's reasons).
    pub fn unknown_bits(self) -> u64 {
        let known = TABLE.iter().fold(0, |acc, (_, bit, ..)| acc | bit);
        self.mask & !known
    }

    /// True if nothing but "idle" is holding the clocks: the clocks run as high as they may.
    pub fn is_unthrottled(self) -> bool {
        self.mask & !ClockEventReason::GpuIdle.bit() == 0
    }
}

/// Serialised with both the raw mask and the names, so `status --json` readers need no table.
impl Serialize for ClockEventReasons {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ClockEventReasons", 2)?;
        st.serialize_field("mask", &self.mask)?;
        st.serialize_field("active", &self.active())?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_load_capture_mask() {
        let r = ClockEventReasons::from_hex("0x0000000000000004");
        assert_eq!(
            r.map(|r| r.active()),
            Some(vec![ClockEventReason::SwPowerCap])
        );
        assert_eq!(ClockEventReason::SwPowerCap.label(), "SW power cap");
        assert_eq!(r.map(|r| r.is_unthrottled()), Some(false));
    }

    #[test]
    fn keeps_unknown_bits_and_refuses_non_hex() {
        let r = ClockEventReasons::from_hex("0x0000000000001001");
        assert_eq!(r.map(|r| r.unknown_bits()), Some(0x1000));
        assert_eq!(r.map(|r| r.is_unthrottled()), Some(false));
        assert_eq!(ClockEventReasons::from_hex("4"), None);
        assert_eq!(ClockEventReasons::from_hex("0xzz"), None);
    }

    #[test]
    fn serialises_mask_and_names() {
        let json = serde_json::to_string(&ClockEventReasons { mask: 0x5 }).ok();
        assert_eq!(
            json.as_deref(),
            Some(r#"{"mask":5,"active":["gpu_idle","sw_power_cap"]}"#)
        );
    }
}
