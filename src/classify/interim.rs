//! Stand-ins until the prompt and template classifier lands (removed then): every
//! kind is classified as a tool is.

use super::{Classifier, Finding};
use crate::json::Json;
use crate::surface::Kind;

impl Classifier {
    pub fn classify_prompt(&self, pinned: &Json, live: &Json) -> Vec<Finding> {
        self.classify(pinned, live)
    }
    pub fn classify_template(&self, pinned: &Json, live: &Json) -> Vec<Finding> {
        self.classify(pinned, live)
    }
    pub fn classify_resource(&self, pinned: &Json, live: &Json) -> Vec<Finding> {
        self.classify(pinned, live)
    }
    pub fn item_added(&self, _kind: Kind, live: &Json) -> Vec<Finding> {
        self.tool_added(live)
    }
    pub fn item_removed(&self, _kind: Kind) -> Vec<Finding> {
        self.tool_removed()
    }
    pub fn renamed(&self, _kind: Kind, _from: &str, _to: &str) -> Vec<Finding> {
        self.tool_removed()
    }
}
