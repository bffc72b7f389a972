//! Parquet (predictions and eval tables from pandas/pyarrow), footer read by the `parquet`
//! crate (Apache Arrow's), built without its codecs and Arrow integration: the footer is all
//! this check reads, and the full crate would add a dozen compression libraries.
//!
//! Proves: the file starts and ends with `PAR1`, the footer's length fits, its Thrift metadata
//! decodes, and every column chunk of every row group lies between the magic and the footer, so
//! a copy cut short fails. Cannot prove: the pages inside each chunk decompress and decode.

use super::{Checked, Problem, corrupt, counted, human_bytes, read_exact_or};
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaDataReader;
use std::fs::File;
use std::io::{Seek, SeekFrom};

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut magic = [0u8; 4];
    read_exact_or(file, &mut magic, "the PAR1 magic")?;
    if &magic != b"PAR1" {
        return Err(corrupt("does not start with PAR1"));
    }
    if len < 12 {
        return Err(corrupt(format!("{len} bytes is too short for a footer")));
    }
    file.seek(SeekFrom::Start(len - 8))?;
    let mut tail = [0u8; 8];
    read_exact_or(file, &mut tail, "the footer")?;
    if &tail[4..] != b"PAR1" {
        return Err(corrupt(
            "does not end with PAR1: the copy is cut short or the writer never closed it",
        ));
    }
    let footer = u64::from(u32::from_le_bytes(tail[..4].try_into().unwrap_or_default()));
    let data_end = (len - 8)
        .checked_sub(footer)
        .filter(|&end| end >= 4)
        .ok_or_else(|| corrupt(format!("footer length {footer} runs past the start")))?;
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&*file)
        .map_err(|e| match e {
            ParquetError::External(e) => Problem::Io(std::io::Error::other(e)),
            other => corrupt(format!("footer: {other}")),
        })?;
    let mut chunks = 0u64;
    for (g, group) in meta.row_groups().iter().enumerate() {
        for column in group.columns() {
            let (start, size) = column.byte_range();
            if start < 4 || start.saturating_add(size) > data_end {
                return Err(corrupt(format!(
                    "row group {g}, column '{}': bytes {start}..{} lie outside the data \
                     (4..{data_end})",
                    column.column_path(),
                    start.saturating_add(size)
                )));
            }
            chunks += 1;
        }
    }
    let rows = meta.file_metadata().num_rows();
    Ok(format!(
        "parquet: {} in {}, {}, {}",
        counted(rows.max(0) as u64, "row", "rows"),
        counted(meta.num_row_groups() as u64, "row group", "row groups"),
        counted(chunks, "column chunk", "column chunks"),
        human_bytes(len)
    ))
}
