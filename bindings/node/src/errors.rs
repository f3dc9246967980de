//! `flakeid_bindings::Error` as an instance of the JavaScript class of its
//! code (`index.js` defines the classes and hands them to [`init`] in every
//! environment: the main thread and each worker thread has its own).

use flakeid_bindings::{Error, ErrorKind};
use napi::bindgen_prelude::{FnArgs, Function, Object, ObjectRef, Unknown};
use napi::{Env, Status};
use napi_derive::napi;

/// This environment's error classes by code, kept for its lifetime.
struct Classes(ObjectRef<false>);

/// Keeps `classes` (an object of error classes by code) as this
/// environment's: `index.js` calls it once as it loads.
#[napi(js_name = "_init")]
pub fn init(env: Env, classes: Object) -> napi::Result<()> {
    let classes = Classes(classes.create_ref::<false>()?);
    env.set_instance_data(classes, (), |_| {})
}

/// The JavaScript error for `error`, to return from a call (napi-rs throws
/// it, or rejects a promise with it).
#[cold]
pub(crate) fn raise(env: &Env, error: Error) -> napi::Error {
    match instance(env, &error) {
        Ok(instance) => napi::Error::from(instance),
        // Only if this environment never ran `index.js` (the addon loaded
        // by hand) or is shutting down: a plain `Error` with the code.
        Err(_) => napi::Error::new(Status::GenericFailure, error.to_string()),
    }
}

/// A `Result` of `flakeid_bindings` as one of napi-rs.
pub(crate) trait OrRaise<T> {
    /// The value, or the error raised as its JavaScript class.
    fn or_raise(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrRaise<T> for Result<T, Error> {
    #[inline]
    fn or_raise(self, env: &Env) -> napi::Result<T> {
        self.map_err(|e| raise(env, e))
    }
}

/// The JavaScript error object for `error`.
pub(crate) fn instance<'env>(env: &'env Env, error: &Error) -> napi::Result<Unknown<'env>> {
    let classes = env.get_instance_data::<Classes>()?.ok_or_else(|| {
        napi::Error::from_reason("flakeid: index.js did not initialise the addon")
    })?;
    let classes = classes.0.get_value(env)?;
    let class: Function<FnArgs<(String, Object)>, Unknown> = classes
        .get(error.kind().code())?
        .ok_or_else(|| napi::Error::from_reason("flakeid: no error class"))?;
    let mut extra = Object::new(env)?;
    if let Some(detail) = error.detail() {
        extra.set("detail", detail)?;
    }
    match error.kind() {
        ErrorKind::SequenceExhausted => {
            let ms = error.retry_after().unwrap_or_default().as_secs_f64() * 1e3;
            extra.set("retryAfter", ms)?;
        }
        ErrorKind::ClockBehind => {
            let ms = error.behind().unwrap_or_default().as_secs_f64() * 1e3;
            extra.set("behind", ms)?;
        }
        ErrorKind::Expired => {
            extra.set("lastMs", error.last_ms().unwrap_or_default() as f64)?;
        }
        _ => {}
    }
    class.new_instance((error.message().to_owned(), extra).into())
}
