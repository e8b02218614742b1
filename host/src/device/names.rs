//! Kernel names of user modules, interned: each distinct name is stored once
//! for the life of the process (errors carry `&'static str`) and has a small
//! id, so a launch can note "the last user kernel" with one atomic store
//! instead of a lock and a copy of the name. Builds on nothing.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, RwLock};

/// An interned kernel name: its text and its id (never 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Name {
    pub(crate) id: u32,
    pub(crate) text: &'static str,
}

struct Table {
    /// name → id, for interning (taken when a module's kernel is resolved).
    ids: Mutex<HashMap<&'static str, u32>>,
    /// id - 1 → name, for the fault report (read only after a failure).
    names: RwLock<Vec<&'static str>>,
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| Table { ids: Mutex::default(), names: RwLock::default() })
}

/// The interned `name` (stored on first use). Not on the launch path: handles
/// intern their kernels' names when they are resolved.
pub(crate) fn intern(name: &str) -> Name {
    let t = table();
    let mut ids = t.ids.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((&text, &id)) = ids.get_key_value(name) {
        return Name { id, text };
    }
    let text: &'static str = Box::leak(name.to_string().into_boxed_str());
    let mut names = t.names.write().unwrap_or_else(|p| p.into_inner());
    names.push(text);
    let id = names.len() as u32;
    ids.insert(text, id);
    Name { id, text }
}

/// The name of `id` (0 or unknown: `None`).
pub(crate) fn name_of(id: u32) -> Option<&'static str> {
    let names = table().names.read().unwrap_or_else(|p| p.into_inner());
    names.get((id as usize).checked_sub(1)?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stored_once_and_found_by_id() {
        let a = intern("names_test_kernel_a");
        let b = intern("names_test_kernel_b");
        assert_ne!(a.id, b.id);
        assert_eq!(intern("names_test_kernel_a"), a);
        assert!(std::ptr::eq(intern("names_test_kernel_a").text, a.text));
        assert_eq!(name_of(a.id), Some("names_test_kernel_a"));
        assert_eq!(name_of(b.id), Some("names_test_kernel_b"));
        assert_eq!(name_of(0), None);
        assert_eq!(name_of(u32::MAX), None);
    }
}
