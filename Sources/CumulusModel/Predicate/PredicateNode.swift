/// The parsed shape of a predicate, before it is lowered to ANDed filters.
/// Kept as a tree only so that `NOT` can see what it applies to.
indirect enum PredicateNode: Sendable {
    /// Operands joined by `AND`/`&&` (a parenthesized group nests one).
    case and([PredicateNode], position: Int)
    /// `NOT`/`!` over its operand.
    case not(PredicateNode, position: Int)
    /// `TRUEPREDICATE` (true) or `FALSEPREDICATE` (false).
    case constant(Bool, position: Int)
    /// One comparison, already resolved to filters.
    case atom(PredicateAtom)
}
