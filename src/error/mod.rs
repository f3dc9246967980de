//! The error types: why a generator cannot be built ([`BuildError`]) or
//! cannot issue now ([`GenerateError`]), why restart safety's state cannot
//! be used or stored ([`StateError`]), and why a node id cannot be leased
//! ([`LeaseError`]). They sit below every module that raises, wraps or
//! reports them (the generator, persistence, the lease, the event hook),
//! which therefore need not import one another, and import nothing but
//! `std` and the layout's field errors.

mod build;
mod generate;
mod lease;
mod state;

pub use build::BuildError;
pub use generate::GenerateError;
pub use lease::LeaseError;
pub use state::{SharedIoError, StateError};

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;
    use crate::id::{ConvertIdError, ParseIdError};
    use crate::layout::{FieldError, LayoutError};
    use crate::node_id::NodeIdError;
    #[cfg(feature = "public-ids")]
    use crate::public_id::PublicIdError;

    /// What an error reporter prints: the messages of `e` and its sources.
    fn report(e: &(dyn Error + 'static)) -> String {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(inner) = next {
            text = format!("{text}: {inner}");
            next = inner.source();
        }
        text
    }

    #[test]
    fn a_wrapped_error_is_reported_once() {
        let state = StateError::from_io(
            "write /data/node.state.tmp",
            std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"),
        );
        let field = FieldError::OutOfRange {
            field: "node".into(),
            value: 5000,
            max: 1023,
        };
        let lease = LeaseError::AllHeld { first: 0, last: 7 };
        let cases: [(Box<dyn Error>, String); 4] = [
            (
                Box::new(BuildError::Field(field.clone())),
                field.to_string(),
            ),
            (
                Box::new(BuildError::State(state.clone())),
                state.to_string(),
            ),
            (
                Box::new(BuildError::Lease(lease.clone())),
                lease.to_string(),
            ),
            (
                Box::new(GenerateError::Storage(state.clone())),
                state.to_string(),
            ),
        ];
        for (error, inner) in cases {
            let text = report(&*error);
            assert_eq!(text.matches(&inner).count(), 1, "{text}");
            assert_eq!(
                text.matches("no space left on device").count(),
                text.contains("node.state") as usize,
                "{text}"
            );
        }
        // The chain of a storage failure ends in the I/O error itself.
        let error = GenerateError::Storage(state);
        let mut last: &(dyn Error + 'static) = &error;
        while let Some(next) = last.source() {
            last = next;
        }
        let io = last.downcast_ref::<std::io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        assert_eq!(
            report(&error),
            "cannot save the reservation: write /data/node.state.tmp failed: \
             no space left on device"
        );
    }

    #[test]
    fn every_error_can_cross_threads() {
        fn assert_error<E: Error + Send + Sync + 'static>() {}
        assert_error::<LayoutError>();
        assert_error::<FieldError>();
        assert_error::<BuildError>();
        assert_error::<LeaseError>();
        assert_error::<NodeIdError>();
        assert_error::<StateError>();
        assert_error::<GenerateError>();
        assert_error::<ParseIdError>();
        assert_error::<ConvertIdError>();
        #[cfg(feature = "public-ids")]
        assert_error::<PublicIdError>();
    }
}
