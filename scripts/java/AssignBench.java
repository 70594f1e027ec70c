import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Driver for the published org.apache.kafka.admin.AdminUtils (kafka-server-common), used by
 * scripts/bench_generate. Our own code: it only calls Kafka's public API.
 *
 * bench BROKERS RACKS TOPICS PARTITIONS RF WARMUP_TOPICS RUNS
 *   Brokers 1..BROKERS, broker b on rack "r" + ((b-1) % RACKS + 1) (RACKS = 0: no racks), sorted by id
 *   as getBrokerMetadatas returns them. One run = what --generate does per topic: one
 *   assignReplicasToBrokers(brokers, PARTITIONS, RF) call (random start) per topic, each result put into a
 *   HashMap keyed by TopicPartition. JIT warm-up: three untimed runs over the first WARMUP_TOPICS topics.
 *   Then RUNS timed runs over all topics, each printed as "run_ms <wall ms> cpu_ms <process CPU ms>" (the
 *   CPU time of the whole JVM, JIT and GC threads included).
 *
 * check  (stdin) one case per line: "FIXED_START START_PARTITION PARTITIONS RF id:rack,id:rack,..." with
 *   rack "-" for none. Prints per line "p:r,r,r p:r,r,r ..." (partitions ascending) or "error <Class>: <msg>".
 */
public class AssignBench {
    static List<BrokerMetadata> brokers(int n, int racks) {
        List<BrokerMetadata> out = new ArrayList<>(n);
        for (int b = 1; b <= n; b++) {
            Optional<String> rack = racks > 0 ? Optional.of("r" + ((b - 1) % racks + 1)) : Optional.empty();
            out.add(new BrokerMetadata(b, rack));
        }
        return out;
    }

    static long run(Collection<BrokerMetadata> brokers, String[] topics, int partitions, int rf) {
        Map<TopicPartition, List<Integer>> proposed = new HashMap<>();
        for (String topic : topics) {
            Map<Integer, List<Integer>> assigned = AdminUtils.assignReplicasToBrokers(brokers, partitions, rf);
            for (Map.Entry<Integer, List<Integer>> e : assigned.entrySet()) {
                proposed.put(new TopicPartition(topic, e.getKey()), e.getValue());
            }
        }
        return proposed.size();
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("bench")) {
            int nBrokers = Integer.parseInt(args[1]);
            int racks = Integer.parseInt(args[2]);
            int nTopics = Integer.parseInt(args[3]);
            int partitions = Integer.parseInt(args[4]);
            int rf = Integer.parseInt(args[5]);
            int warmupTopics = Math.min(Integer.parseInt(args[6]), nTopics);
            int runs = Integer.parseInt(args[7]);
            List<BrokerMetadata> bs = brokers(nBrokers, racks);
            int width = String.valueOf(Math.max(nTopics - 1, 0)).length();
            String[] topics = new String[nTopics];
            for (int i = 0; i < nTopics; i++) {
                topics[i] = String.format("topic-%0" + width + "d", i);
            }
            long sink = 0;
            String[] warm = Arrays.copyOf(topics, warmupTopics);
            for (int i = 0; i < 3; i++) {
                sink += run(bs, warm, partitions, rf);
            }
            com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            for (int i = 0; i < runs; i++) {
                long c0 = os.getProcessCpuTime();
                long t0 = System.nanoTime();
                sink += run(bs, topics, partitions, rf);
                long t1 = System.nanoTime();
                long c1 = os.getProcessCpuTime();
                System.out.println("run_ms " + (t1 - t0) / 1e6 + " cpu_ms " + (c1 - c0) / 1e6);
            }
            System.out.println("sink " + sink);
            return;
        }
        if (args.length > 0 && args[0].equals("check")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
            StringBuilder out = new StringBuilder();
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                List<BrokerMetadata> bs = new ArrayList<>();
                if (f.length > 4 && !f[4].isEmpty()) {
                    for (String item : f[4].split(",")) {
                        String[] kv = item.split(":", 2);
                        Optional<String> rack = kv[1].equals("-") ? Optional.empty() : Optional.of(kv[1]);
                        bs.add(new BrokerMetadata(Integer.parseInt(kv[0]), rack));
                    }
                }
                try {
                    Map<Integer, List<Integer>> got = AdminUtils.assignReplicasToBrokers(
                        bs, Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[0]),
                        Integer.parseInt(f[1]));
                    List<String> parts = new ArrayList<>();
                    for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(got).entrySet()) {
                        StringBuilder sb = new StringBuilder();
                        sb.append(e.getKey()).append(':');
                        for (int j = 0; j < e.getValue().size(); j++) {
                            if (j > 0) sb.append(',');
                            sb.append(e.getValue().get(j));
                        }
                        parts.add(sb.toString());
                    }
                    out.append(String.join(" ", parts)).append('\n');
                } catch (RuntimeException e) {
                    out.append("error ").append(e.getClass().getSimpleName()).append(": ")
                        .append(e.getMessage()).append('\n');
                }
            }
            System.out.print(out);
            return;
        }
        System.err.println("usage: AssignBench bench BROKERS RACKS TOPICS PARTITIONS RF WARMUP_TOPICS RUNS | check");
        System.exit(2);
    }
}
