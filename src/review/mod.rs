//! What a person reads and approves: the reports and their renderers (`report`),
//! update proposals and the new lock (`update`), package upgrades (`upgrade`),
//! `verify --no-connect` (`offline`), and one planned call judged (`call`). Uses only
//! the layers below.

pub mod call;
pub mod offline;
pub mod report;
pub mod update;
pub mod upgrade;
