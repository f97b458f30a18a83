//! What mcp-lock writes down and reads back: the lock (`lock`), the client profiles it
//! pins (`profile`), the handshakes hosts were seen sending (`observed`), and the
//! guard's audit log, its chain and who signs it (`audit`). Uses only the layers
//! below.

pub mod audit;
pub mod lock;
pub mod observed;
pub mod profile;
