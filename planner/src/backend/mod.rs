//! Backends: where objects live, how completion messages travel, and how
//! tasks are started. The embedded backend is [`local`]; the coordinator
//! only sees the seams (`squall_core::seams`).

pub mod local;
