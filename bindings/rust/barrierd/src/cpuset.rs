// SPDX-License-Identifier: MIT
//! A CPU set laid out as the kernel's `cpu_set_t` bit mask, for
//! [`Barrierd::wait_cpus`](crate::Barrierd::wait_cpus).

/// A set of CPU numbers: a bit mask of `u64` words, as `sched_setaffinity(2)` reads it (the
/// library wants a size that is a multiple of `sizeof(long)`, which this always is).
///
/// ```
/// let mut set = barrierd::CpuSet::new();
/// set.insert(0);
/// set.insert(65);
/// assert!(set.contains(65) && !set.contains(1));
/// assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 65]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// An empty set.
    ///
    /// ```
    /// assert!(barrierd::CpuSet::new().is_empty());
    /// ```
    pub fn new() -> CpuSet {
        CpuSet { words: Vec::new() }
    }

    /// Add CPU `cpu`.
    ///
    /// ```
    /// let mut set = barrierd::CpuSet::new();
    /// set.insert(3);
    /// assert!(set.contains(3));
    /// ```
    pub fn insert(&mut self, cpu: usize) {
        let word = cpu / 64;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (cpu % 64);
    }

    /// Remove CPU `cpu`.
    ///
    /// ```
    /// let mut set: barrierd::CpuSet = [1, 2].into_iter().collect();
    /// set.remove(1);
    /// assert_eq!(set.iter().collect::<Vec<_>>(), vec![2]);
    /// ```
    pub fn remove(&mut self, cpu: usize) {
        if let Some(w) = self.words.get_mut(cpu / 64) {
            *w &= !(1 << (cpu % 64));
        }
    }

    /// Is `cpu` in the set?
    ///
    /// ```
    /// assert!(!barrierd::CpuSet::new().contains(0));
    /// ```
    pub fn contains(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .map_or(false, |w| w & (1 << (cpu % 64)) != 0)
    }

    /// Is the set empty?
    ///
    /// ```
    /// let set: barrierd::CpuSet = [7].into_iter().collect();
    /// assert!(!set.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The CPUs in the set, in increasing order.
    ///
    /// ```
    /// let set: barrierd::CpuSet = [5, 1].into_iter().collect();
    /// assert_eq!(set.iter().collect::<Vec<_>>(), vec![1, 5]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.words.len() * 64).filter(move |&c| self.contains(c))
    }

    /// The mask as the library takes it: a pointer and a size in bytes (at least one word).
    pub(crate) fn as_mask(&self) -> (*const u64, usize) {
        static EMPTY: u64 = 0;
        if self.words.is_empty() {
            (&EMPTY, 8)
        } else {
            (self.words.as_ptr(), self.words.len() * 8)
        }
    }
}

impl FromIterator<usize> for CpuSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> CpuSet {
        let mut set = CpuSet::new();
        for cpu in iter {
            set.insert(cpu);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::CpuSet;

    #[test]
    fn mask_is_whole_words_little_endian_bits() {
        let set: CpuSet = [0, 63, 64].into_iter().collect();
        let (p, len) = set.as_mask();
        assert_eq!(len, 16);
        let words = unsafe { std::slice::from_raw_parts(p, 2) };
        assert_eq!(words, &[1 | 1 << 63, 1]);
        assert_eq!(CpuSet::new().as_mask().1, 8);
    }
}
