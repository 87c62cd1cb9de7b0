//! Other platforms: `open` fails with `Error::Unsupported`, so no handle can
//! exist; the methods below are unreachable by construction.

use std::sync::Arc;
use std::time::Instant;

use crate::error::Error;
use crate::segment::Census;

pub(crate) enum Attachment {}

pub(crate) fn open(
    _name: &str,
    _total: Option<u64>,
    _mode: u32,
    _accept_foreign_owner: bool,
    _resize: bool,
    _label: &str,
) -> Result<Arc<Attachment>, Error> {
    Err(Error::Unsupported)
}

pub(crate) fn unlink(_name: &str) -> Result<(), Error> {
    Err(Error::Unsupported)
}

pub(crate) fn list() -> Result<Vec<String>, Error> {
    Err(Error::Unsupported)
}

impl Attachment {
    pub(crate) fn total(&self) -> u64 {
        match *self {}
    }
    pub(crate) fn available(&self) -> u64 {
        match *self {}
    }
    pub(crate) fn is_closed(&self) -> bool {
        match *self {}
    }
    pub(crate) fn try_acquire(&self, _n: u64) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn release(&self, _n: u64) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn close(&self) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn reopen(&self, _deadline: Option<Instant>) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn is_unlinked(&self) -> Result<bool, Error> {
        match *self {}
    }
    pub(crate) fn set_total(&self, _n: u64, _deadline: Option<Instant>) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn held(&self) -> Result<u64, Error> {
        match *self {}
    }
    pub(crate) fn census(&self) -> Result<Census, Error> {
        match *self {}
    }
    pub(crate) fn record(&self) -> u32 {
        match *self {}
    }
    pub(crate) fn inspect(
        &self,
        _deadline: Option<Instant>,
    ) -> Result<volt_sem::inspect::Inspection, Error> {
        match *self {}
    }
    pub(crate) fn label(&self) -> &str {
        match *self {}
    }
    pub(crate) fn pid(&self) -> u32 {
        match *self {}
    }
    pub(crate) fn zero_permits(&self) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn enable_stats(&self) {
        match *self {}
    }
    pub(crate) fn record_timeout(&self) {
        match *self {}
    }
    pub(crate) fn stats(&self) -> volt_sem::stats::Stats {
        match *self {}
    }
    pub(crate) fn acquire_deadline(&self, _n: u64, _d: Option<Instant>) -> Result<(), Error> {
        match *self {}
    }
    pub(crate) fn fail_blocking(&self, _t: crate::BlockingTicket) -> Result<bool, Error> {
        match *self {}
    }
    pub(crate) fn acquire_deadline_polled(
        &self,
        _n: u64,
        _d: Option<Instant>,
        _poll: Option<(std::time::Duration, &mut dyn FnMut() -> bool)>,
        _on_queued: Option<&mut dyn FnMut(crate::BlockingTicket)>,
    ) -> Result<bool, Error> {
        match *self {}
    }
}
