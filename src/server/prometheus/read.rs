use crate::server::http::{Reply, Request};
use crate::server::AppState;
use std::sync::Arc;
pub async fn handle(_state: &Arc<AppState>, _req: Request) -> Reply {
    super::format::error(super::format::ErrorType::Unavailable, "remote read is not implemented yet")
}
