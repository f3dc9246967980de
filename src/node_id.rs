//! Static node ids, for services without a coordination store: from an
//! environment variable, or from the ordinal of a Kubernetes StatefulSet pod.
//!
//! Each function checks the node id against the layout, so a bad deployment
//! fails at start with a [`NodeIdError`] that says what is wrong, instead of
//! building generators that share a node id.
//!
//! Static ids are unique only as long as the deployment keeps them so: a
//! StatefulSet gives each ordinal to one pod at a time (it waits for the old
//! pod to terminate before starting its replacement), but two StatefulSets,
//! or two clusters, writing to one database need distinct ranges (a
//! `datacenter` field, or an offset). When that cannot be guaranteed, lease
//! node ids from etcd or Redis instead (the `etcd` and `redis` features).
//!
//! ```
//! use flakeid::{Generator, Layout, node_id};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let layout = Layout::twitter();
//! // In a pod, `node_id::from_statefulset(&layout)?` reads the host name
//! // itself; `node_id::from_env("FLAKEID_NODE_ID", &layout)?` reads a variable.
//! let node = node_id::from_hostname("orders-7", &layout)?;
//! let generator = Generator::builder(layout).node_id(node).build()?;
//! assert_eq!(generator.node_id(), 7);
//! # Ok(())
//! # }
//! ```

use std::fmt;

use crate::id::Id;
use crate::layout::Layout;

/// The node id in environment variable `var`: a decimal integer, surrounding
/// whitespace allowed, within the layout's range.
///
/// On Kubernetes 1.28 and later, a StatefulSet can pass its pod's ordinal
/// this way, from the `apps.kubernetes.io/pod-index` label through the
/// downward API (see the `flakeid::lease` module docs, features `etcd` and `redis`).
///
/// # Errors
///
/// [`NodeIdError::NotSet`] if the variable is not set,
/// [`NodeIdError::NotANumber`] if it is not a decimal integer (or not Unicode),
/// [`NodeIdError::OutOfRange`] if it is above [`Layout::max_node_id`].
///
/// ```
/// use flakeid::{Layout, NodeIdError, node_id};
///
/// let err = node_id::from_env("FLAKEID_DOC_UNSET_VARIABLE", &Layout::twitter()).unwrap_err();
/// assert_eq!(err, NodeIdError::NotSet { var: "FLAKEID_DOC_UNSET_VARIABLE".into() });
/// ```
pub fn from_env(var: &str, layout: &Layout) -> Result<u64, NodeIdError> {
    let value = std::env::var_os(var).ok_or_else(|| NodeIdError::NotSet { var: var.into() })?;
    // A value that is not Unicode is set, just not a number.
    parse(
        &value.to_string_lossy(),
        || format!("environment variable {var}"),
        layout,
    )
}

/// The ordinal of the StatefulSet pod this process runs in: the numeric
/// suffix of the host name (`web-3` is node 3), which Kubernetes sets to the
/// pod's name. The host name is read from `/proc/sys/kernel/hostname`, then
/// `/etc/hostname`, then the `HOSTNAME` environment variable.
///
/// # Errors
///
/// [`NodeIdError::Hostname`] if no host name can be read; otherwise as
/// [`from_hostname`].
///
/// ```no_run
/// use flakeid::{Generator, Layout, node_id};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::twitter();
/// let generator = Generator::builder(layout.clone())
///     .node_id(node_id::from_statefulset(&layout)?)
///     .build()?;
/// # Ok(())
/// # }
/// ```
pub fn from_statefulset(layout: &Layout) -> Result<u64, NodeIdError> {
    from_hostname(&hostname()?, layout)
}

/// The StatefulSet ordinal in `hostname`: the digits after its last `-`,
/// in the first label of a fully qualified name
/// (`web-3.web.default.svc.cluster.local` is node 3).
///
/// # Errors
///
/// [`NodeIdError::NoOrdinal`] if the name does not end in `-<digits>`,
/// [`NodeIdError::NotANumber`] if the ordinal overflows a `u64`,
/// [`NodeIdError::OutOfRange`] if it is above [`Layout::max_node_id`].
///
/// ```
/// use flakeid::{Layout, NodeIdError, node_id};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let layout = Layout::twitter();
/// assert_eq!(node_id::from_hostname("orders-12.orders.prod.svc.cluster.local", &layout)?, 12);
/// assert_eq!(
///     node_id::from_hostname("orders-1024", &layout),
///     Err(NodeIdError::OutOfRange { source: "host name orders-1024".into(), value: 1024, max: 1023 })
/// );
/// # Ok(())
/// # }
/// ```
pub fn from_hostname(hostname: &str, layout: &Layout) -> Result<u64, NodeIdError> {
    let name = hostname.trim();
    let label = name.split('.').next().unwrap_or(name);
    let ordinal = match label.rsplit_once('-') {
        Some((pod, digits))
            if !pod.is_empty()
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            digits
        }
        _ => {
            return Err(NodeIdError::NoOrdinal {
                hostname: hostname.into(),
            });
        }
    };
    parse(ordinal, || format!("host name {name}"), layout)
}

fn parse(value: &str, source: impl Fn() -> String, layout: &Layout) -> Result<u64, NodeIdError> {
    // Plain decimal digits, as an ID's: no sign, no spaces inside.
    let node = Id::parse_decimal(value.trim())
        .map_err(|_| NodeIdError::NotANumber {
            source: source(),
            value: value.into(),
        })?
        .to_u64();
    if node > layout.max_node_id() {
        return Err(NodeIdError::OutOfRange {
            source: source(),
            value: node,
            max: layout.max_node_id(),
        });
    }
    Ok(node)
}

fn hostname() -> Result<String, NodeIdError> {
    let mut reasons = Vec::new();
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        match std::fs::read_to_string(path) {
            Ok(name) if !name.trim().is_empty() => return Ok(name.trim().to_owned()),
            Ok(_) => reasons.push(format!("{path} is empty")),
            Err(e) => reasons.push(format!("{path}: {e}")),
        }
    }
    match std::env::var("HOSTNAME") {
        Ok(name) if !name.trim().is_empty() => Ok(name.trim().to_owned()),
        _ => {
            reasons.push("HOSTNAME is not set".into());
            Err(NodeIdError::Hostname {
                reason: reasons.join("; "),
            })
        }
    }
}

/// A node id could not be read from the environment or the host name, or it
/// does not fit the layout (see [`node_id`](crate::node_id)).
///
/// ```
/// use flakeid::{Layout, NodeIdError, node_id};
///
/// let err = node_id::from_hostname("web", &Layout::twitter()).unwrap_err();
/// assert_eq!(err, NodeIdError::NoOrdinal { hostname: "web".into() });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeIdError {
    /// The environment variable is not set.
    NotSet {
        /// The variable's name.
        var: String,
    },
    /// The value is not a non-negative decimal integer.
    NotANumber {
        /// Where it came from, for example `environment variable FLAKEID_NODE_ID`.
        source: String,
        /// The value found.
        value: String,
    },
    /// The host name does not end in `-<ordinal>`, as a StatefulSet pod's
    /// (`web-3`) does.
    NoOrdinal {
        /// The host name.
        hostname: String,
    },
    /// The node id is larger than the layout's largest.
    OutOfRange {
        /// Where it came from.
        source: String,
        /// The node id found.
        value: u64,
        /// The layout's largest node id.
        max: u64,
    },
    /// The host name could not be read.
    Hostname {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for NodeIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeIdError::NotSet { var } => {
                write!(f, "environment variable {var} is not set")
            }
            NodeIdError::NotANumber { source, value } => {
                write!(
                    f,
                    "{source} is {value:?}, not a node id (a decimal integer)"
                )
            }
            NodeIdError::NoOrdinal { hostname } => write!(
                f,
                "host name {hostname:?} does not end in -<ordinal> like a StatefulSet pod's"
            ),
            NodeIdError::OutOfRange { source, value, max } => write!(
                f,
                "node id {value} from {source} is out of the layout's range (0..={max})"
            ),
            NodeIdError::Hostname { reason } => write!(f, "cannot read the host name: {reason}"),
        }
    }
}

impl std::error::Error for NodeIdError {}

#[cfg(all(test, not(flakeid_loom), not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_can_be_read() {
        // Every Linux machine and container has one.
        assert!(!hostname().unwrap().is_empty());
    }
}
