/// Why a sandbox could not start or persist its state.
public enum SandboxError: Error, CustomStringConvertible {
    case stateDirectory(String)
    case stateFile(path: String, reason: String)
    case tsa(String)

    public var description: String {
        switch self {
        case .stateDirectory(let reason): return "sandbox state directory: \(reason)"
        case .stateFile(let path, let reason): return "sandbox state file \(path): \(reason)"
        case .tsa(let reason): return "sandbox TSA: \(reason)"
        }
    }
}
