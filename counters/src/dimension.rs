//! Sample dimensions: the coordinates (XCC, shader engine, instance, ...) of each value a
//! hardware counter returns, and the shapes built from them.

use std::fmt;

/// One coordinate of a counter sample. The declaration order is the canonical order of
/// dimensions in every [`Shape`]: every block's sample layout is a subsequence of it, so
/// values keep the layout aqlprofile returns (last dimension varying fastest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    /// Accelerator complex die (MI300/MI350 XCDs); present only when the GPU has more than one.
    Xcc,
    /// Active interposer die (MI300 memory blocks only).
    Aid,
    /// The whole agent (never produced by hardware; accepted in expressions).
    Agent,
    /// Block instance inside one XCC.
    Instance,
    /// Shader engine inside one XCC.
    ShaderEngine,
    /// Shader array inside one shader engine.
    ShaderArray,
    /// Workgroup processor inside one shader array (gfx11/gfx12).
    Wgp,
}

impl Dimension {
    /// Every dimension, in canonical order.
    pub const ALL: [Dimension; 7] = [
        Dimension::Xcc,
        Dimension::Aid,
        Dimension::Agent,
        Dimension::Instance,
        Dimension::ShaderEngine,
        Dimension::ShaderArray,
        Dimension::Wgp,
    ];

    /// The name used in expressions and listings, e.g. `DIMENSION_SHADER_ENGINE`.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Xcc => "DIMENSION_XCC",
            Dimension::Aid => "DIMENSION_AID",
            Dimension::Agent => "DIMENSION_AGENT",
            Dimension::Instance => "DIMENSION_INSTANCE",
            Dimension::ShaderEngine => "DIMENSION_SHADER_ENGINE",
            Dimension::ShaderArray => "DIMENSION_SHADER_ARRAY",
            Dimension::Wgp => "DIMENSION_WGP",
        }
    }

    /// The short name used in `arch-defs` YAML files (`XCC`, `AID`, `INSTANCE`, `SE`, `SA`, `WGP`).
    pub fn short_name(self) -> &'static str {
        match self {
            Dimension::Xcc => "XCC",
            Dimension::Aid => "AID",
            Dimension::Agent => "AGENT",
            Dimension::Instance => "INSTANCE",
            Dimension::ShaderEngine => "SE",
            Dimension::ShaderArray => "SA",
            Dimension::Wgp => "WGP",
        }
    }

    /// rocprofiler-sdk's number of this dimension (`rocprofiler_profile_counter_instance_types`,
    /// where 0 is `DIMENSION_NONE`), which rocprofv3 writes as a dimension's `id`.
    pub fn rocprofiler_sdk_id(self) -> u32 {
        match self {
            Dimension::Xcc => 1,
            Dimension::Aid => 2,
            Dimension::ShaderEngine => 3,
            Dimension::Agent => 4,
            Dimension::ShaderArray => 5,
            Dimension::Wgp => 6,
            Dimension::Instance => 7,
        }
    }

    /// Parses an expression name such as `DIMENSION_XCC`.
    pub fn from_name(name: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Parses a short YAML name such as `SE`.
    pub fn from_short_name(name: &str) -> Option<Dimension> {
        Dimension::ALL.into_iter().find(|d| d.short_name() == name)
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The extents of a dimensioned value, outermost first, in canonical [`Dimension`] order.
/// Values are stored row-major (the last dimension varies fastest). A scalar has no dimensions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: Vec<(Dimension, u32)>,
}

impl Shape {
    /// The shape of a single value.
    pub fn scalar() -> Shape {
        Shape { dims: Vec::new() }
    }

    /// A shape from (dimension, extent) pairs; they are put in canonical order.
    pub fn new(mut dims: Vec<(Dimension, u32)>) -> Shape {
        dims.sort_by_key(|(d, _)| *d);
        Shape { dims }
    }

    /// The (dimension, extent) pairs, outermost first.
    pub fn dims(&self) -> &[(Dimension, u32)] {
        &self.dims
    }

    /// The extent of `dim`, if the shape has it.
    pub fn extent(&self, dim: Dimension) -> Option<u32> {
        self.dims.iter().find(|(d, _)| *d == dim).map(|(_, n)| *n)
    }

    /// The number of values (1 for a scalar).
    pub fn size(&self) -> usize {
        self.dims.iter().map(|(_, n)| *n as usize).product()
    }

    /// True for a scalar shape (no dimensions).
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }

    /// The coordinates of the value at flat index `index`, one per dimension.
    pub fn coordinates(&self, mut index: usize) -> Vec<u32> {
        let mut coords = vec![0; self.dims.len()];
        for (slot, (_, extent)) in coords.iter_mut().zip(&self.dims).rev() {
            *slot = (index % *extent as usize) as u32;
            index /= *extent as usize;
        }
        coords
    }

    /// Row-major strides of each dimension, in elements.
    pub(crate) fn strides(&self) -> Vec<usize> {
        let mut strides = vec![0; self.dims.len()];
        let mut step = 1;
        for (slot, (_, extent)) in strides.iter_mut().zip(&self.dims).rev() {
            *slot = step;
            step *= *extent as usize;
        }
        strides
    }
}

impl fmt::Display for Shape {
    /// rocprofv3's listing style: `DIMENSION_XCC[0:7] DIMENSION_INSTANCE[0:0]`;
    /// a scalar prints as `DIMENSION_NONE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dims.is_empty() {
            return f.write_str("DIMENSION_NONE");
        }
        let mut first = true;
        for (dim, extent) in &self.dims {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{}[0:{}]", dim.name(), extent.saturating_sub(1))?;
        }
        Ok(())
    }
}
