// The machine's memory, the bound readers and run builders check sizes from files and configs
// against before they allocate.
import Foundation

/// The machine's physical memory.
public enum PhysicalMemory {
    /// In bytes: `sysconf`'s physical pages times the page size (what /proc/meminfo's MemTotal
    /// reports); Int.max when the system does not say, so that nothing is refused for want of it.
    public static var bytes: Int {
        let pages = sysconf(Int32(_SC_PHYS_PAGES)), pageSize = sysconf(Int32(_SC_PAGESIZE))
        guard pages > 0, pageSize > 0 else { return .max }
        let (product, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return overflow ? .max : product
    }
}
