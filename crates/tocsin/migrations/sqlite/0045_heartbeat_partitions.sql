-- PostgreSQL partitions raw heartbeats by day (its migration of the same number); SQLite keeps
-- one table, pruned in slices. This file keeps the two migration lists numbered alike.
SELECT 1;
