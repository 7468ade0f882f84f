//! Who reads a usage view (compare, pricing changes).

use router_core::Model;
use router_core::store::ApiKeyRecord;
use uuid::Uuid;

/// A `usage:read` key, or a signed-in browser session (A-15, CF-25), which
/// has no model policy.
pub enum Viewer {
    Key(ApiKeyRecord),
    /// The session's ID.
    Session(Uuid),
}

impl Viewer {
    /// The key's model policy; a session may see every model.
    pub fn allows_model(&self, model: &Model) -> bool {
        match self {
            Viewer::Key(key) => key.policy.allows_model(model),
            Viewer::Session(_) => true,
        }
    }

    /// The models a key's policy names; `None`: no restriction.
    pub fn allowed_models(&self) -> Option<&[String]> {
        match self {
            Viewer::Key(key) => key.policy.allowed_models.as_deref(),
            Viewer::Session(_) => None,
        }
    }

    /// What a cursor binds: the credential's kind and ID, and the model
    /// policy version (a session's is always 0).
    pub fn binding(&self) -> (u8, Uuid, i64) {
        match self {
            Viewer::Key(key) => (1, key.key_id, key.policy.version),
            Viewer::Session(id) => (2, *id, 0),
        }
    }
}
