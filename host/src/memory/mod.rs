//! Memory and copies: device buffers and views ([`DeviceVec`], [`View`],
//! [`ViewMut`]), page-locked host memory ([`PinnedVec`]), the copies between
//! them (destination first), and which `Gpu` owns what.

mod alloc;
pub(crate) mod buffer;
pub(crate) mod copy;
pub(crate) mod element;
pub(crate) mod owners;
pub(crate) mod pinned;

pub use buffer::{AsView, AsViewMut, DeviceVec, Element, Pod, View, ViewMut};
pub use copy::{CopySrc, HostCopyFrom};
pub use pinned::{HostDst, HostMut, HostRef, HostSrc, PinnedVec};
