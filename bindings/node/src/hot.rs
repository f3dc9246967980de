//! The hot path: `nextId`, `pollId`, `nextIdString`, `nextIds`, `pollIds`,
//! `fillIds` and the benchmarks' floor `_floor`, as plain Node-API
//! functions bound to each generator object.
//!
//! napi-rs's class methods find their object through `this` with checks
//! and bookkeeping that cost far more than an ID. These functions carry
//! their generator's [`Handle`] as their callback data instead: a call is
//! one `napi_get_cb_info`, the core's compare-and-swap, and one
//! `napi_create_bigint_uint64`. No `this` is read, so a function called on
//! another object still issues from its own generator, and each function
//! holds the handle (dropped by its finalizer), so one kept past its
//! object stays valid.

use std::ffi::{CStr, c_void};
use std::ptr;
use std::rc::Rc;

use flakeid_bindings::{Error, Wait};
use napi::bindgen_prelude::{ClassInstance, Object, Unknown};
use napi::{Env, JsError, JsValue, sys};
use napi_derive::napi;

use crate::args;
use crate::errors::raise;
use crate::generator::{self, Generator, Handle};

/// Binds the hot-path functions of `generator` to it as own, read-only,
/// non-enumerable properties. `index.js` calls it in `Generator`'s
/// constructor.
#[napi(js_name = "_bind")]
pub fn bind(env: Env, generator: ClassInstance<Generator>) -> napi::Result<()> {
    let handle = &generator.handle;
    let object: Object = generator.as_object(&env);
    type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;
    let methods: [(&CStr, Callback); 7] = [
        (c"nextId", next_id),
        (c"pollId", poll_id),
        (c"nextIdString", next_id_string),
        (c"nextIds", next_ids),
        (c"pollIds", poll_ids),
        (c"fillIds", fill_ids),
        (c"_floor", floor),
    ];
    let mut properties = Vec::with_capacity(methods.len());
    for (name, callback) in methods {
        let data = Rc::into_raw(Rc::clone(handle)).cast_mut().cast::<c_void>();
        let mut function = ptr::null_mut();
        // SAFETY: a function of this environment whose data is a strong
        // count of the handle, given back by the finalizer below once the
        // function is collected.
        unsafe {
            napi::check_status!(sys::napi_create_function(
                env.raw(),
                name.as_ptr(),
                name.count_bytes() as isize,
                Some(callback),
                data,
                &mut function,
            ))?;
            napi::check_status!(sys::napi_add_finalizer(
                env.raw(),
                function,
                data,
                Some(drop_handle),
                ptr::null_mut(),
                ptr::null_mut(),
            ))?;
        }
        properties.push(sys::napi_property_descriptor {
            utf8name: name.as_ptr(),
            name: ptr::null_mut(),
            method: None,
            getter: None,
            setter: None,
            value: function,
            attributes: sys::PropertyAttributes::default,
            data: ptr::null_mut(),
        });
    }
    // SAFETY: descriptors of values made above, on an object of this
    // environment.
    napi::check_status!(unsafe {
        sys::napi_define_properties(
            env.raw(),
            object.raw(),
            properties.len(),
            properties.as_ptr(),
        )
    })?;
    Ok(())
}

/// A hot function's finalizer: gives back its count of the handle.
unsafe extern "C" fn drop_handle(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` came from `Rc::into_raw` in `bind`, once per function,
    // and the finalizer runs once, on the handle's JavaScript thread.
    drop(unsafe { Rc::from_raw(data.cast_const().cast::<Handle>()) });
}

/// The handle a hot function was made with, and its arguments (up to one).
///
/// # Safety
///
/// `info` is the callback info of a call of a function made by [`bind`].
#[inline(always)]
unsafe fn call<'a>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    want_argument: bool,
) -> (&'a Handle, sys::napi_value) {
    let mut data = ptr::null_mut();
    let mut argc = usize::from(want_argument);
    let mut argument = ptr::null_mut();
    // SAFETY: per the caller; `argv` has room for `argc` values.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            if want_argument {
                &mut argc
            } else {
                ptr::null_mut()
            },
            if want_argument {
                &mut argument
            } else {
                ptr::null_mut()
            },
            ptr::null_mut(),
            &mut data,
        );
    }
    if want_argument && argc == 0 {
        // Called without it: `undefined`, as JavaScript reads a missing one.
        // SAFETY: a value of this environment.
        unsafe { sys::napi_get_undefined(env, &mut argument) };
    }
    // SAFETY: `data` is the handle's pointer, kept alive by this function's
    // count until its finalizer, which cannot run during a call of it.
    (unsafe { &*data.cast_const().cast::<Handle>() }, argument)
}

/// A bigint for `id`, or `null` with the error thrown.
#[inline(always)]
fn bigint(env: sys::napi_env, id: Result<u64, Error>) -> sys::napi_value {
    match id {
        Ok(id) => {
            let mut value = ptr::null_mut();
            // SAFETY: a bigint of this environment.
            unsafe { sys::napi_create_bigint_uint64(env, id, &mut value) };
            value
        }
        Err(e) => throw(env, raise(&Env::from_raw(env), e)),
    }
}

/// Throws `error`; returns what a callback that threw returns.
#[cold]
fn throw(env: sys::napi_env, error: napi::Error) -> sys::napi_value {
    // SAFETY: on this environment's thread, in a callback.
    unsafe { JsError::from(error).throw_into(env) };
    ptr::null_mut()
}

unsafe extern "C" fn next_id(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    let (handle, _) = unsafe { call(env, info, false) };
    bigint(env, generator::id(handle, Wait::Report))
}

unsafe extern "C" fn poll_id(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    let (handle, _) = unsafe { call(env, info, false) };
    bigint(env, generator::id(handle, Wait::Never))
}

unsafe extern "C" fn next_id_string(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    let (handle, _) = unsafe { call(env, info, false) };
    match generator::id(handle, Wait::Report) {
        Ok(id) => {
            let text = id.to_string();
            let mut value = ptr::null_mut();
            // SAFETY: a string of this environment from `text`'s bytes.
            unsafe {
                sys::napi_create_string_latin1(
                    env,
                    text.as_ptr().cast(),
                    text.len() as isize,
                    &mut value,
                )
            };
            value
        }
        Err(e) => throw(env, raise(&Env::from_raw(env), e)),
    }
}

/// `nextIds` and `pollIds`.
///
/// # Safety
///
/// As [`call`].
unsafe fn ids(env: sys::napi_env, info: sys::napi_callback_info, wait: Wait) -> sys::napi_value {
    // SAFETY: per the caller.
    let (handle, n) = unsafe { call(env, info, true) };
    let env = Env::from_raw(env);
    // SAFETY: an argument of this call.
    let n = unsafe { Unknown::from_raw_unchecked(env.raw(), n) };
    let made = args::count(&env, &n).and_then(|n| {
        generator::id_array(&env, n, |out| {
            generator::fill(handle, out, wait).map_err(|e| raise(&env, e))
        })
    });
    match made {
        Ok(array) => array.raw(),
        Err(e) => throw(env.raw(), e),
    }
}

unsafe extern "C" fn next_ids(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    unsafe { ids(env, info, Wait::Report) }
}

unsafe extern "C" fn poll_ids(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    unsafe { ids(env, info, Wait::Never) }
}

/// `fillIds(array)`: fills a caller's `BigUint64Array` with consecutive
/// IDs, waiting as `nextId`; returns the array.
unsafe extern "C" fn fill_ids(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    let (handle, array) = unsafe { call(env, info, true) };
    let mut is_typedarray = false;
    let mut kind = sys::TypedarrayType::int8_array;
    let mut length = 0;
    let mut data = ptr::null_mut();
    // SAFETY: reads of a value of this call.
    let status = unsafe {
        sys::napi_is_typedarray(env, array, &mut is_typedarray);
        if is_typedarray {
            sys::napi_get_typedarray_info(
                env,
                array,
                &mut kind,
                &mut length,
                &mut data,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        } else {
            sys::Status::napi_ok
        }
    };
    let env_ = Env::from_raw(env);
    if status != sys::Status::napi_ok {
        return throw(env, napi::Error::from_status(napi::Status::from(status)));
    }
    if !is_typedarray || kind != sys::TypedarrayType::biguint64_array {
        // SAFETY: an argument of this call.
        let value = unsafe { Unknown::from_raw_unchecked(env, array) };
        return throw(
            env,
            args::wrong_type(&env_, "array", "a BigUint64Array", &value),
        );
    }
    let filled = if length == 0 || data.is_null() {
        Ok(0)
    } else {
        // SAFETY: the typed array's `length` elements, aligned for u64 (a
        // BigUint64Array's offset is a multiple of 8), not otherwise
        // referred to during this call (no JavaScript runs in it).
        let ids = unsafe { std::slice::from_raw_parts_mut(data.cast::<u64>(), length) };
        generator::fill(handle, ids, Wait::Report)
    };
    match filled {
        Ok(_) => array,
        Err(e) => throw(env, raise(&env_, e)),
    }
}

/// The benchmarks' floor: what `nextId` costs without the ID (the same
/// call, the same bigint made, the same check that the handle is open).
unsafe extern "C" fn floor(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: a call of a function made by `bind`.
    let (handle, _) = unsafe { call(env, info, false) };
    let value = match &*handle.shared() {
        Some(shared) => Ok(shared.core.floor()),
        None => Err(generator::closed_error()),
    };
    bigint(env, value)
}
