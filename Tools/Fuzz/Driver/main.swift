import CumulusFuzzTargets
import Dispatch
import Foundation

// cumulus-fuzz: the fuzz targets of `Tools/Fuzz/Targets`, two ways.
//
// Built by `make fuzz` (with CUMULUS_FUZZ, coverage and AddressSanitizer), it is a
// libFuzzer binary:   cumulus-fuzz TARGET [libFuzzer flags] CORPUS-DIR...
// Built plainly, it replays inputs:   cumulus-fuzz TARGET FILE-OR-DIR...
// and writes the seed corpus:         cumulus-fuzz --write-seeds DIR

let usage = """
    usage: cumulus-fuzz TARGET [libFuzzer flags] [CORPUS-DIR...]   (built by make fuzz)
           cumulus-fuzz TARGET FILE-OR-DIR...                      (replays inputs)
           cumulus-fuzz --write-seeds DIR
    targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))
    """

/// Runs `body` to completion from synchronous code (libFuzzer's callback and the
/// top level here run on the main thread, outside Swift's cooperative pool).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: T?
    Task {
        result = await body()
        done.signal()
    }
    done.wait()
    return result!
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}

if arguments[1] == "--write-seeds", arguments.count == 3 {
    let root = URL(fileURLWithPath: arguments[2])
    let failure: String? = blocking {
        do {
            for target in FuzzTarget.allCases {
                let directory = root.appendingPathComponent(target.rawValue)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for (index, seed) in try await target.seeds().enumerated() {
                    try Data(seed).write(to: directory.appendingPathComponent(String(format: "seed-%02d", index)))
                }
            }
            return nil
        } catch {
            return "\(error)"
        }
    }
    if let failure {
        FileHandle.standardError.write(Data("cumulus-fuzz: \(failure)\n".utf8))
        exit(1)
    }
    exit(0)
}

guard let target = FuzzTarget(rawValue: arguments[1]) else {
    FileHandle.standardError.write(Data("cumulus-fuzz: unknown target \(arguments[1])\n\(usage)\n".utf8))
    exit(2)
}

#if CUMULUS_FUZZ
/// libFuzzer's entry for a program with its own `main` (`fuzzer_no_main`).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

nonisolated(unsafe) var selected = target
// libFuzzer reads flags and corpus directories from argv: drop the target name.
var fuzzerArguments = [arguments[0]] + arguments.dropFirst(2)
var cArguments = fuzzerArguments.map { strdup($0) } + [nil]
var count = CInt(fuzzerArguments.count)
let status = cArguments.withUnsafeMutableBufferPointer { buffer in
    var pointer = buffer.baseAddress
    return LLVMFuzzerRunDriver(&count, &pointer) { data, size in
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        let target = selected
        let outcome = blocking { await target.run(input) }
        if case .broken(let what) = outcome {
            // A trap makes libFuzzer keep the input as a crash artifact.
            fatalError("\(target.rawValue): \(what)")
        }
        return 0
    }
}
exit(status)
#else
var broken = 0
var seen = 0
for path in arguments.dropFirst(2) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("cumulus-fuzz: no such file \(path)\n".utf8))
        exit(2)
    }
    let files = isDirectory.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 } : [path]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        let input = Array(data)
        let outcome = blocking { await target.run(input) }
        seen += 1
        print("\(file): \(outcome)")
        if outcome.isBroken { broken += 1 }
    }
}
print("\(seen) inputs, \(broken) broken")
exit(broken == 0 ? 0 : 1)
#endif
