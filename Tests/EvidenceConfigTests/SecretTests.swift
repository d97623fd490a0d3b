import EvidenceConfig
import Foundation
import Testing
import EvidenceTesting

@Suite struct SecretTests {
    @Test func fileReadableByOthersIsRefusedWithoutLeakingIt() throws {
        let dir = TempDir()
        let file = dir.write("qed.key", "sk-very-secret\n", mode: 0o644)
        let error = configError {
            try ConfigLoader.readSecret(.file(file), field: "notaries.qed.api_key_file", configFile: "evidence.toml")
        }
        #expect(error?.file == "evidence.toml")
        #expect(error?.field == "notaries.qed.api_key_file")
        #expect(error?.message == "secret file \(file) is readable by others (mode 0644); run chmod 600 \(file)")
        #expect(error?.description.contains("sk-very-secret") == false)
    }

    @Test func groupWritableFileIsRefused() throws {
        let dir = TempDir()
        let file = dir.write("qed.key", "s3cr3t", mode: 0o620)
        let error = configError { try ConfigLoader.readSecret(.file(file), field: "f", configFile: "c") }
        #expect(error?.message.contains("(mode 0620)") == true)
        #expect(error?.description.contains("s3cr3t") == false)
    }

    @Test func privateFileIsReadAndTrimmed() throws {
        let dir = TempDir()
        let file = dir.write("qed.key", "  sk-very-secret\n", mode: 0o600)
        let secret = try ConfigLoader.readSecret(.file(file), field: "f", configFile: "c")
        #expect(secret == "sk-very-secret")
    }

    @Test func emptySecretFileIsRefused() throws {
        let dir = TempDir()
        let file = dir.write("empty.key", "\n", mode: 0o600)
        let error = configError { try ConfigLoader.readSecret(.file(file), field: "f", configFile: "c") }
        #expect(error?.message == "secret file \(file) is empty")
    }

    @Test func missingFileIsReported() throws {
        let dir = TempDir()
        let error = configError { try ConfigLoader.readSecret(.file(dir.path + "/none"), field: "f", configFile: "c") }
        #expect(error?.message.hasPrefix("cannot open secret file \(dir.path)/none") == true)
    }

    @Test func environmentSecretIsReadAndAMissingOneNamed() throws {
        let env = ["EVIDENCE_QED_API_KEY": "sk-env-secret"]
        #expect(try ConfigLoader.readSecret(.env("EVIDENCE_QED_API_KEY"), field: "f", configFile: "c", environment: env)
            == "sk-env-secret")
        let error = configError {
            try ConfigLoader.readSecret(.env("EVIDENCE_BOX_SECRET"), field: "f", configFile: "c", environment: env)
        }
        #expect(error?.message == "environment variable EVIDENCE_BOX_SECRET is not set")
    }
}
