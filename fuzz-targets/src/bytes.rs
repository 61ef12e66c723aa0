//! Byte-at-a-time decoding shared by the targets' inputs: every choice is one byte taken
//! modulo the number of alternatives, so the fuzzer's byte mutations map to single decisions
//! and an input can be written back as the bytes that decode to it.

use arbitrary::Unstructured;

/// One byte (0 once the data is used up).
pub fn byte(u: &mut Unstructured<'_>) -> arbitrary::Result<u8> {
    u.arbitrary::<u8>()
}

/// One of `n` alternatives (`n` ≥ 1).
pub fn pick(u: &mut Unstructured<'_>, n: usize) -> arbitrary::Result<usize> {
    Ok(usize::from(byte(u)?) % n.max(1))
}

/// A number below 65,536 from two bytes, high byte first.
pub fn wide(u: &mut Unstructured<'_>) -> arbitrary::Result<u64> {
    let hi = u64::from(byte(u)?);
    let lo = u64::from(byte(u)?);
    Ok(hi << 8 | lo)
}

/// The two bytes [`wide`] reads for `n` (`n` < 65,536).
pub fn wide_bytes(n: u64) -> [u8; 2] {
    let n = n.min(0xffff);
    [(n >> 8) as u8, (n & 0xff) as u8]
}
