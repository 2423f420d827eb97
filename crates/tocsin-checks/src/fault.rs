//! Telling the probe's own failure from the target's. A check that could not even open a
//! socket because this process or machine ran out of something (descriptors, kernel buffers,
//! memory) says nothing about the target: [`local_fault`] recognises those errors anywhere in
//! an error's source chain, and the check sets [`crate::Outcome::probe_fault`], which the
//! server treats as "this region did not report" — never as a failure toward DOWN.

use std::error::Error;
use std::io;

/// The OS errors that mean "this probe ran out", with their names (Linux numbering, the
/// only platform the service ships for; elsewhere they are simply never matched).
const LOCAL_RESOURCE_ERRORS: [(i32, &str); 4] = [
    (24, "too many open files (EMFILE)"),
    (23, "too many open files in the system (ENFILE)"),
    (105, "no buffer space available (ENOBUFS)"),
    (12, "out of memory (ENOMEM)"),
];

/// The name of the local resource `e` says ran out, if that is what it says.
pub fn local_io_fault(e: &io::Error) -> Option<&'static str> {
    let code = e.raw_os_error()?;
    LOCAL_RESOURCE_ERRORS
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// [`local_io_fault`] of the first I/O error in `e`'s source chain.
pub fn local_fault(e: &(dyn Error + 'static)) -> Option<&'static str> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if let Some(name) = local_io_fault(io) {
                return Some(name);
            }
            // An io::Error may wrap another error (hyper, rustls) that holds the cause.
            if let Some(inner) = io.get_ref() {
                if let Some(name) = local_fault(inner) {
                    return Some(name);
                }
            }
        }
        next = err.source();
    }
    None
}

/// The message of a probe fault: what ran out, and that the target was not judged.
pub fn fault_message(name: &str) -> String {
    format!("probe could not run the check: {name}; the target was not judged")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_is_the_probes_fault() {
        let e = io::Error::from_raw_os_error(24);
        assert_eq!(local_io_fault(&e), Some("too many open files (EMFILE)"));
        let wrapped = io::Error::other(io::Error::from_raw_os_error(105));
        assert_eq!(
            local_fault(&wrapped),
            Some("no buffer space available (ENOBUFS)")
        );
        // Refused or unreachable is the target's (or the network's) answer.
        assert_eq!(local_io_fault(&io::Error::from_raw_os_error(111)), None);
        assert_eq!(local_io_fault(&io::Error::other("x")), None);
    }
}
