//! A function of the session wrapped with a check before each call: the
//! series ceiling ([`crate::series_limit`]) and the reservation of a
//! call's output ([`crate::value_limit`]); or with a look at each answer
//! ([`crate::zoned_stamps`]). The wrapper answers for the function in
//! every other respect (name, aliases, signature, types, the session's
//! settings).

use std::fmt::Debug;
use std::hash::Hash;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature,
};
use datafusion::prelude::SessionContext;

/// What runs before each call of a wrapped function.
pub trait BeforeCall: Debug + Clone + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// What the call holds while it runs (a memory reservation), dropped
    /// once it has answered.
    type Held;

    /// Checks the call of the function `name` with `args`; an error is the
    /// call's.
    fn before(&self, name: &str, args: &ScalarFunctionArgs) -> Result<Self::Held>;

    /// The call's answer, given the field it was planned to have; by
    /// default as the function gave it.
    fn after(&self, out: ColumnarValue, _planned: &FieldRef) -> Result<ColumnarValue> {
        Ok(out)
    }
}

/// `inner` with `check` before each call.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Guarded<C> {
    inner: ScalarUDF,
    check: C,
}

/// Wraps the session's function `name`, if it has one not wrapped by a
/// check of this kind already, with the check `make` gives for it.
pub fn wrap<C: BeforeCall>(ctx: &SessionContext, name: &str, make: impl FnOnce() -> C) {
    let Some(inner) = ctx.state().scalar_functions().get(name).cloned() else {
        return;
    };
    if inner.inner().downcast_ref::<Guarded<C>>().is_some() {
        return;
    }
    ctx.register_udf(ScalarUDF::new_from_impl(Guarded {
        inner: inner.as_ref().clone(),
        check: make(),
    }));
}

impl<C: BeforeCall> ScalarUDFImpl for Guarded<C> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        let inner = self.inner.inner().with_updated_config(config)?;
        Some(ScalarUDF::new_from_impl(Guarded {
            inner,
            check: self.check.clone(),
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let planned = std::sync::Arc::clone(&args.return_field);
        let held = self.check.before(self.inner.name(), &args)?;
        let out = self.inner.inner().invoke_with_args(args);
        drop(held);
        self.check.after(out?, &planned)
    }
}
