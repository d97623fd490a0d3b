// The tests' oracle for RFC 4998 evidence records: Bouncy Castle's ERS implementation
// (Debian libbcpkix-java 1.72), code we did not write, checks a record this program made.
//
//   java -cp /usr/share/java/bcprov.jar:/usr/share/java/bcpkix.jar:/usr/share/java/bcutil.jar \
//        scripts/oracles/ERSCheck.java CA.pem DATE|now RECORD.ers DATA-FILE [RECORD.ers DATA-FILE …]
//
// For each pair, one line: "verified …" when the data is present in the record (validatePresent),
// the newest archive time-stamp's signature verifies (validate) and its signing certificate chains
// to a certificate of CA.pem as of DATE (ISO 8601; PKIX, no revocation), else "refused: reason".
// Exit 0 when every pair verified, 1 otherwise (one JVM for many records: start-up is the cost).
import java.io.File;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Security;
import java.security.cert.CertPathBuilder;
import java.security.cert.CertStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.CollectionCertStoreParameters;
import java.security.cert.PKIXBuilderParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509CertSelector;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cms.jcajce.JcaSimpleSignerInfoVerifierBuilder;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.operator.DigestCalculatorProvider;
import org.bouncycastle.operator.jcajce.JcaDigestCalculatorProviderBuilder;
import org.bouncycastle.tsp.ers.ERSEvidenceRecord;
import org.bouncycastle.tsp.ers.ERSFileData;

public class ERSCheck {
    public static void main(String[] args) {
        if (args.length < 4 || args.length % 2 != 0) {
            System.err.println("usage: ERSCheck CA.pem DATE|now RECORD DATA [RECORD DATA …]");
            System.exit(2);
        }
        Security.addProvider(new BouncyCastleProvider());
        boolean all = true;
        for (int i = 2; i < args.length; i += 2) {
            all &= check(args[0], args[1], args[i], args[i + 1]);
        }
        System.exit(all ? 0 : 1);
    }

    static boolean check(String caFile, String date, String recordFile, String dataFile) {
        try {
            Date at = date.equals("now") ? new Date() : Date.from(Instant.parse(date));
            DigestCalculatorProvider digests = new JcaDigestCalculatorProviderBuilder().setProvider("BC").build();
            ERSEvidenceRecord record = new ERSEvidenceRecord(Files.readAllBytes(Path.of(recordFile)), digests);
            record.validatePresent(new ERSFileData(new File(dataFile)), at);

            X509CertificateHolder signer = record.getSigningCertificate();
            if (signer == null) {
                throw new Exception("the time-stamp token carries no signing certificate");
            }
            record.validate(new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(signer));

            JcaX509CertificateConverter converter = new JcaX509CertificateConverter().setProvider("BC");
            X509Certificate signerCert = converter.getCertificate(signer);
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            Set<TrustAnchor> anchors = new HashSet<>();
            try (FileInputStream in = new FileInputStream(caFile)) {
                for (Certificate c : factory.generateCertificates(in)) {
                    anchors.add(new TrustAnchor((X509Certificate) c, null));
                }
            }
            X509CertSelector target = new X509CertSelector();
            target.setCertificate(signerCert);
            PKIXBuilderParameters params = new PKIXBuilderParameters(anchors, target);
            params.setRevocationEnabled(false);
            params.setDate(at);
            List<Certificate> pool = new ArrayList<>();
            pool.add(signerCert);
            params.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(pool)));
            CertPathBuilder.getInstance("PKIX").build(params);

            System.out.println(recordFile + ": verified: data present, root " + hex(record.getPrimaryRootHash())
                + ", signed by " + signerCert.getSubjectX500Principal().getName());
            return true;
        } catch (Exception e) {
            System.out.println(recordFile + ": refused: " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return false;
        }
    }

    static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder();
        for (byte b : bytes) {
            s.append(String.format("%02x", b));
        }
        return s.toString();
    }
}
