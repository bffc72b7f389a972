//! What the fleet state is told: produced by the live monitor and by the demo replay alike.

use crate::provider::ProviderReport;
use crate::readings::{GpuAvailability, GpuReading, HostReading};

#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    Gpu(GpuReading),
    GpuAvailability(GpuAvailability),
    /// Boxed: a host reading is large and arrives once a period.
    Host(Box<HostReading>),
    /// A stream's output could not be read; says which stream and why.
    ProbeError(String),
    /// What the provider's CLI said about the box.
    Provider(ProviderReport),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub host: String,
    pub observation: Observation,
}
