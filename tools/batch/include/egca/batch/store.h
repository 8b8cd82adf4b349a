// The result store of a batch run: a directory with one append-only JSONL file,
// `results.jsonl`, and a lock file.
//
//   line 1     {"type":"header","format":"egca-batch-store/2","config":{...},"crc":"..."}
//   then       {"type":"problem",...}  one per problem, before its samples (ProblemResolution)
//              {"type":"sample",...}   one per sample (SampleRecord)
//              {"type":"bad",...}      a bad input record (file, line, message)
//              {"type":"session",...}  one per finished run session (timing only)
//
// Every line is self-checking: its last field is "crc", the CRC-32 (zlib) of the line's
// JSON object without that field, i.e. of `line[0 : size-18] + "}"`. The file is written
// with O_APPEND and fsync'd in batches, so after a kill -9 at most the last line is torn;
// opening the store detects a torn or corrupt tail, cuts it off and goes on from the last
// whole record. A corrupt line in the middle (disk damage) is skipped and counted; its
// sample is simply routed again.
//
// Identity: a sample is keyed by (problem, key, dup), key = SampleKey (SHA-256, 64 hex);
// a restart skips done keys. Format 1 stores (16-hex FNV-1a keys) are read but not resumed
// or merged. The
// header's config names the data (file digests), the options that change results and the
// shard; a store refuses to be resumed with a different config (the error names the first
// field that differs).
//
// Thread-safety: Append* may be called from several threads. One process at a time per
// store (an flock on `DIR/lock`; a second writer gets a clear error).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "egca/batch/records.h"
#include "egca/batch/result.h"
#include "egca/core/status.h"

namespace egca::batch {

// What a run's results depend on, written to the store's header line.
struct RunConfig {
  std::string problems_path;    // as given (informational: data are identified by digest)
  std::string problems_digest;  // Fnv1a64 of the file's bytes, hex
  std::string problems_format;  // loader format name ("humaneval", "apps", "auto", ...)
  std::string samples_path;
  std::string samples_digest;
  std::string constraints;  // "none", "extract", or "file:<digest>"
  double timeout_seconds = 0;
  bool runtime_error_is_logic = false;
  bool check_comparability = true;
  bool passing_bypasses_gates = false;  // gates::RouterOptions::passing_bypasses_gates
  bool localize = true;  // false (--grade-only): routes without localization (no spans)
  bool apps_allclose = false;  // tracer::RunOptions::apps_allclose (APPS's numeric leniency)
  int64_t limit = -1;  // samples taken (after the shard filter), -1: all
  uint64_t max_program_bytes = 0;
  uint64_t seed = 0;  // random-boundary seed
  int32_t shard_index = 0;
  int32_t shard_count = 1;
  std::string egca_version;  // project version; part of the config
  std::string egca_commit;   // informational (a rebuilt binary may resume)

  std::string ToJson() const;
  static StatusOr<RunConfig> FromJson(std::string_view json);
};

enum class ConfigMatch {
  kResume,  // everything that changes results, shard included
  kMerge,   // the same, except the shard
};
// OK, or FAILED_PRECONDITION naming the first field that differs and both values.
// Paths and the commit are never compared (data are compared by digest).
Status CompareConfigs(const RunConfig& stored, const RunConfig& wanted, ConfigMatch match);

// One finished run session (timing; never part of result equality).
struct SessionRecord {
  double wall_seconds = 0;
  int64_t samples_routed = 0;   // records written in this session
  int64_t programs_routed = 0;  // distinct programs routed (duplicates are copied)
  int32_t workers = 0;
  double load_average = 0;  // 1-minute load average at the end of the session
  std::string started;      // UTC, ISO 8601
  std::string host;
};

// Everything a store holds, in file order.
struct StoreContents {
  RunConfig config;
  std::vector<ProblemResolution> problems;
  std::vector<SampleRecord> samples;
  std::vector<BadRecord> bad;
  std::vector<SessionRecord> sessions;
  // Store format: 2 (SHA-256 sample keys), or 1 (FNV-1a keys: readable, never resumed or
  // merged; ResultStore::Open and MergeStores refuse it with a message saying so).
  int format = 2;
  int64_t torn_lines = 0;     // a torn last line (ignored)
  int64_t corrupt_lines = 0;  // lines in the middle failing their check (ignored)
  uint64_t valid_bytes = 0;   // bytes up to the end of the last whole record
};

// Reads DIR/results.jsonl without modifying it. Errors: no store there, no valid header.
StatusOr<StoreContents> ReadStore(const std::string& dir);

// The framing of one line: `json_object` (no "crc" field, no newline) with its crc
// appended, plus '\n'. And the check of a line without its '\n': the line itself (a JSON
// object: the record plus its crc field) if its crc is valid, else nullopt.
std::string FrameLine(std::string_view json_object);
std::optional<std::string_view> CheckLine(std::string_view line);

class ResultStore {
 public:
  // Opens DIR for a run with `config`, creating the directory and the header if there is
  // no store yet. An existing store must have a config that matches (kResume); its
  // contents are loaded (existing()) and a torn tail is cut off before appending.
  static StatusOr<std::unique_ptr<ResultStore>> Open(const std::string& dir,
                                                     const RunConfig& config);
  // Writes a new store at DIR (must not hold one) from `contents` (merge).
  static Status Write(const std::string& dir, const StoreContents& contents);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const StoreContents& existing() const { return existing_; }
  const std::string& dir() const { return dir_; }

  // Appends records (one write per call, so a batch of lines lands together or torn at
  // the end only). fsync at most every `sync_every` records or on Flush().
  Status AppendSamples(const std::vector<SampleRecord>& records);
  Status AppendProblem(const ProblemResolution& resolution);
  Status AppendBad(const BadRecord& bad);
  Status AppendSession(const SessionRecord& session);
  Status Flush();

  int sync_every = 256;

 private:
  ResultStore() = default;
  Status AppendLines(const std::string& lines, int records);

  std::string dir_;
  int fd_ = -1;
  int lock_fd_ = -1;
  StoreContents existing_;
  std::mutex mu_;
  int unsynced_ = 0;
};

// Merges shard stores into a new store at `out`: configs must agree (kMerge); a key present
// in several inputs must have the same result (else FAILED_PRECONDITION naming it); bad
// records are deduplicated. The merged header's shard is 0/1 when every shard 0..N-1 is
// present exactly once, else the error says which are missing or repeated.
struct MergeReport {
  int64_t samples = 0;
  int64_t duplicates = 0;  // identical records found in more than one input
  std::vector<std::string> notes;
};
Status MergeStores(const std::vector<std::string>& inputs, const std::string& out,
                   MergeReport* report);

// Shard of a problem: Fnv1a64(id) mod count (stable across machines and runs).
int32_t ProblemShard(std::string_view problem_id, int32_t count);

}  // namespace egca::batch
