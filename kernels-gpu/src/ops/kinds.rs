//! What an element-wise kernel computes and how it moves data: the
//! operations, their names (the kernels' prefixes) and the access patterns.

/// A two-input operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// IEEE 754-2019 `minimum`: NaN if either is NaN, -0 below +0.
    Min,
    /// IEEE 754-2019 `maximum`: NaN if either is NaN, +0 above -0.
    Max,
}

impl BinaryOp {
    /// Every binary operation.
    pub const ALL: [BinaryOp; 6] =
        [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Min, BinaryOp::Max];
    /// Lower-case name, the prefix of its kernels.
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
        }
    }
}

/// A one-input operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    /// `-a` (the sign bit flipped, NaN included).
    Neg,
    /// `|a|` (the sign bit cleared).
    Abs,
    /// `max(a, 0)`: +0 for negative inputs and -0, NaN kept.
    Relu,
    /// `e^a` (the activations below: `gpukern_device::activations`).
    Exp,
    /// `ln a`.
    Log,
    /// `tanh a`.
    Tanh,
    /// `1 / (1 + e^-a)`.
    Sigmoid,
    /// `a · sigmoid(a)`.
    Silu,
    /// `a/2 · (1 + erf(a/√2))`.
    Gelu,
    /// GELU's tanh approximation.
    GeluTanh,
    /// `1/√a`.
    Rsqrt,
    /// `√a`.
    Sqrt,
}

impl UnaryOp {
    /// Every unary operation.
    pub const ALL: [UnaryOp; 12] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Silu,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Rsqrt,
        UnaryOp::Sqrt,
    ];
    /// The activations (rules of `gpukern_device::activations`).
    pub const ACTIVATIONS: [UnaryOp; 9] = [
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Silu,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Rsqrt,
        UnaryOp::Sqrt,
    ];
    /// Lower-case name, the prefix of its kernels.
    pub const fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Relu => "relu",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Silu => "silu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sqrt => "sqrt",
        }
    }
    /// For an activation, its f32 function (`gpukern_device::math`, the same
    /// bits on host and device), which the f32 kernels apply (f16 and bf16
    /// are correctly rounded: `gpukern_device::activations`); `None` for the
    /// sign-bit operations.
    pub fn activation(self) -> Option<fn(f32) -> f32> {
        gpukern_device::activations::by_name(self.name())
    }
}

/// What an element-wise kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `c = op(a, b)`.
    Binary(BinaryOp),
    /// `c = op(a)`.
    Unary(UnaryOp),
    /// `c = alpha·a + beta·b`, each product and the sum rounded.
    Axpby,
}

impl OpKind {
    /// Every operation: binary, unary, then axpby.
    pub const ALL: [OpKind; 19] = [
        OpKind::Binary(BinaryOp::Add),
        OpKind::Binary(BinaryOp::Sub),
        OpKind::Binary(BinaryOp::Mul),
        OpKind::Binary(BinaryOp::Div),
        OpKind::Binary(BinaryOp::Min),
        OpKind::Binary(BinaryOp::Max),
        OpKind::Unary(UnaryOp::Neg),
        OpKind::Unary(UnaryOp::Abs),
        OpKind::Unary(UnaryOp::Relu),
        OpKind::Unary(UnaryOp::Exp),
        OpKind::Unary(UnaryOp::Log),
        OpKind::Unary(UnaryOp::Tanh),
        OpKind::Unary(UnaryOp::Sigmoid),
        OpKind::Unary(UnaryOp::Silu),
        OpKind::Unary(UnaryOp::Gelu),
        OpKind::Unary(UnaryOp::GeluTanh),
        OpKind::Unary(UnaryOp::Rsqrt),
        OpKind::Unary(UnaryOp::Sqrt),
        OpKind::Axpby,
    ];
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::Binary(op) => op.name(),
            OpKind::Unary(op) => op.name(),
            OpKind::Axpby => "axpby",
        }
    }
    /// Operands read per element.
    pub const fn inputs(self) -> usize {
        match self {
            OpKind::Unary(_) => 1,
            _ => 2,
        }
    }
}

/// Access pattern of an element-wise kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpPattern {
    /// One element per thread; operands need only element alignment.
    Scalar,
    /// One 16-byte pack per thread; operands 16-byte aligned.
    Pack,
    /// As `Pack`, with sm_90's packed bf16 arithmetic (`add/sub/mul.rn.bf16x2`)
    /// and `cvt.rn.bf16.f32` rounding: bf16 only, sm_90 module.
    PackSm90,
}

impl OpPattern {
    /// Every pattern.
    pub const ALL: [OpPattern; 3] = [OpPattern::Scalar, OpPattern::Pack, OpPattern::PackSm90];

    /// Elements per lane group of `dtype` (the grid is one thread per group).
    pub const fn lanes(self, dtype: crate::Dtype) -> u32 {
        match self {
            OpPattern::Scalar => 1,
            OpPattern::Pack | OpPattern::PackSm90 => (16 / dtype.size()) as u32,
        }
    }
    /// Byte alignment every operand must have.
    pub const fn align(self, dtype: crate::Dtype) -> usize {
        match self {
            OpPattern::Scalar => dtype.size(),
            OpPattern::Pack | OpPattern::PackSm90 => 16,
        }
    }
    /// True for the patterns of the sm_90 module.
    pub const fn needs_sm90(self) -> bool {
        matches!(self, OpPattern::PackSm90)
    }
}
