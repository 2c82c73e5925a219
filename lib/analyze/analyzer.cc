#include <fnmatch.h>

#include <algorithm>
#include <regex>
#include <map>
#include <set>

#include "lib/analyze/analysis.h"
#include "lib/analyze/scan.h"
#include "lib/analyze/sizes.h"
#include "lib/formats/detect.h"
#include "lib/formats/thin.h"

namespace zipnn::analyze {

namespace {

using config::DeltaAgainst;

// One storage policy played over the trajectory as the clean filter would
// store it (lib/store/checkin.cc, CheckIn; lib/store/placement.h).
struct Scenario {
  PolicyOutcome outcome;
  double min_gain = 0;
  size_t last_base = 0;
  uint64_t last_base_size = 0;
  int previous_depth = 0;
  uint64_t previous_chain = 0;  // bytes of the previous version's chain (newest: delta)
  // Newest: whole. The newest so far, stored whole until the next comes:
  // its index, standalone size, and the delta it takes if the next one
  // re-stores it as a delta of the version before it (or of its base).
  size_t pending = 0;
  uint64_t pending_size = 0;
  std::optional<uint64_t> pending_forward;
  uint32_t run = 0;  // the deltas of later versions chained up to `pending`

  bool Whole() const { return outcome.newest == config::Newest::kWhole; }

  config::Policy AsPolicy() const {
    config::Policy p;
    p.base_interval = outcome.base_interval == 0 ? UINT32_MAX : outcome.base_interval;
    p.delta_against = outcome.against;
    p.max_chain = outcome.max_chain == kNoChainLimit ? UINT32_MAX : outcome.max_chain;
    return p;
  }

  // The version `at` would be a delta against: for newest: delta, the one
  // its chain goes to, or nullopt when it is due to be a base; for newest:
  // whole, the one it goes to if the next version re-stores it as a delta
  // of an earlier one.
  std::optional<size_t> Against(size_t at) const {
    if (Whole()) {
      const config::Stretch stretch = config::StretchOf(AsPolicy());
      if (at == 0 || at - last_base > stretch.forward) return std::nullopt;
      return stretch.against_base ? last_base : at - 1;
    }
    // Due k versions after the last base, as the store counts (a base a
    // chain limit forced restarts the count).
    const uint32_t k = outcome.base_interval;
    if (at == 0 || (k != 0 && at - last_base >= k)) return std::nullopt;
    const int depth = outcome.against == DeltaAgainst::kBase ? 0 : previous_depth;
    if (static_cast<uint64_t>(depth) + 1 > outcome.max_chain) return std::nullopt;
    return outcome.against == DeltaAgainst::kBase ? last_base : at - 1;
  }

  void Base(size_t at, uint64_t size) {
    outcome.stored_bytes += size;
    ++outcome.bases;
    last_base = at;
    last_base_size = size;
    previous_depth = 0;
    previous_chain = size;
  }

  // Stores version `at`: standalone size `base_size`, or as a delta of
  // `delta_size` bytes when Against(at) named one (newest: whole: the
  // delta it takes when the next one re-stores it; Demote comes first).
  void Store(size_t at, uint64_t base_size, std::optional<uint64_t> delta_size) {
    if (Whole()) {
      pending = at;
      pending_size = base_size;
      pending_forward = delta_size;
      outcome.latest_bytes = base_size;
      return;
    }
    const bool pays = delta_size.has_value() &&
                      static_cast<double>(*delta_size) <= static_cast<double>(last_base_size) * (1 - min_gain);
    if (!pays) {
      Base(at, base_size);
      outcome.latest_bytes = base_size;
      return;
    }
    const int depth = (outcome.against == DeltaAgainst::kBase ? 0 : previous_depth) + 1;
    outcome.stored_bytes += *delta_size;
    outcome.worst_chain = std::max(outcome.worst_chain, depth);
    previous_depth = depth;
    previous_chain = *delta_size + (outcome.against == DeltaAgainst::kBase ? last_base_size : previous_chain);
    outcome.latest_bytes = previous_chain;
  }

  // Newest: whole. `pending`, now that a newer version follows it, as
  // PlaceDemoted re-stores it; `reverse` is its delta against the newer
  // one.
  void Demote(uint64_t reverse) {
    const config::Stretch stretch = config::StretchOf(AsPolicy());
    const uint32_t k = outcome.base_interval;
    const size_t since = pending - last_base;
    const bool may_be_delta = pending > 0 && (k == 0 || since < k);
    auto pays = [&](uint64_t delta) {
      return static_cast<double>(delta) <= static_cast<double>(pending_size) * (1 - min_gain);
    };
    if (may_be_delta && since <= stretch.forward) {
      const int depth = stretch.against_base ? 1 : previous_depth + 1;
      if (pending_forward && static_cast<uint64_t>(depth) <= outcome.max_chain && pays(*pending_forward)) {
        outcome.stored_bytes += *pending_forward;
        outcome.worst_chain = std::max(outcome.worst_chain, depth);
        previous_depth = depth;
        return;
      }
    } else if (may_be_delta && run + 1 <= stretch.reverse && pays(reverse)) {
      outcome.stored_bytes += reverse;
      outcome.worst_chain = std::max(outcome.worst_chain, static_cast<int>(++run));
      return;
    }
    Base(pending, pending_size);
    run = 0;
  }

  // The newest version stays whole.
  void Finish() {
    if (Whole() && outcome.latest_bytes > 0) Base(pending, pending_size);
  }
};

std::vector<Scenario> MakeScenarios(const config::Policy& current) {
  std::vector<Scenario> scenarios;
  bool current_listed = false;
  for (config::Newest newest : {config::Newest::kWhole, config::Newest::kDelta}) {
    for (uint32_t k : {1u, 2u, 5u, 7u, 10u, 20u, 0u}) {
      for (DeltaAgainst against : {DeltaAgainst::kPrevious, DeltaAgainst::kBase}) {
        Scenario s;
        s.outcome.base_interval = k;
        s.outcome.against = against;
        s.outcome.newest = newest;
        s.outcome.max_chain = k == 0 ? kNoChainLimit : config::DefaultMaxChain(k, newest);
        s.min_gain = current.min_gain;
        s.outcome.current = k == current.base_interval && against == current.delta_against &&
                            newest == current.newest && s.outcome.max_chain == current.max_chain;
        current_listed = current_listed || s.outcome.current;
        scenarios.push_back(s);
      }
    }
  }
  if (!current_listed) {
    Scenario s;
    s.outcome.base_interval = current.base_interval;
    s.outcome.against = current.delta_against;
    s.outcome.newest = current.newest;
    s.outcome.max_chain = current.max_chain;
    s.outcome.current = true;
    s.min_gain = current.min_gain;
    scenarios.push_back(s);
  }
  return scenarios;
}

struct Kept {
  std::shared_ptr<Input> input;
  ContentId id;
  uint64_t standalone = 0;  // auto size

  formats::CheckpointView coded() const { return input->checkpoint.View(id); }
};

void Summarize(const ScanResult& scan, CheckpointRow& row) {
  for (const TensorChange& t : scan.tensors) {
    if (t.status != TensorStatus::kRemoved) {
      ++row.tensors;
      row.parameters += t.stats.elements;
      if (row.reference) {
        // A one-element tensor is a counter or a scale (an optimizer's
        // step, 100 -> 200), not a weight: its norms would outweigh every
        // weight's in the row's relative update, so they stay out of it.
        ChangeStats counted = t.stats;
        if (counted.elements <= 1) counted.diff_sq = counted.ref_sq = 0;
        row.change.Add(counted);
      }
    }
    if (!row.reference) continue;
    switch (t.status) {
      case TensorStatus::kChanged:
        ++row.changed_tensors;
        break;
      case TensorStatus::kFrozen:
        ++row.frozen_tensors;
        break;
      case TensorStatus::kAdded:
        ++row.added_tensors;
        break;
      case TensorStatus::kReshaped:
        ++row.reshaped_tensors;
        break;
      case TensorStatus::kRemoved:
        ++row.removed_tensors;
        break;
    }
  }
}

}  // namespace

std::vector<codec::Precision> ThinningOutcome::DefaultsFor(const formats::FileLayout& layout) {
  bool wide = false, narrow = false;
  for (const formats::Tensor& t : layout.tensors) {
    wide = wide || t.dtype == codec::DType::kF32 || t.dtype == codec::DType::kF64;
    narrow = narrow || t.dtype == codec::DType::kBF16 || t.dtype == codec::DType::kF16;
  }
  using Kind = codec::Precision::Kind;
  std::vector<codec::Precision> list;
  if (wide) {
    for (int b : {27, 23, 20}) list.push_back(codec::Precision{Kind::kAbsolute, b});
    list.push_back(codec::Precision{Kind::kRelative, 10});
  }
  if (narrow) {
    for (int k : {5, 4, 3}) list.push_back(codec::Precision{Kind::kRelative, k});
  }
  return list;
}

struct Analyzer::State {
  Options options;
  ThreadPool pool;
  Analysis analysis;
  std::map<size_t, Kept> kept;  // earlier checkpoints a later one may be compared with
  std::vector<Scenario> scenarios;

  explicit State(Options o)
      : options(std::move(o)),
        pool(options.policy.threads > 0 ? options.policy.threads : ThreadPool::DefaultThreads()) {
    options.base_interval = std::max(1u, options.base_interval);
    analysis.against = options.against;
    analysis.base_interval = options.base_interval;
    analysis.transform = options.policy.delta_transform;
    analysis.tensor_filter = options.filter_text;
    if (options.what_if) scenarios = MakeScenarios(options.policy);
  }

  // The periodic base a checkpoint's vs_base delta is against: the last
  // multiple of the interval before it.
  size_t PeriodicBase(size_t at) const { return (at - 1) / options.base_interval * options.base_interval; }

  bool WantsHistogram(const CheckpointRow& row) const {
    const std::string& at = options.histogram_at;
    return at.empty() || at == row.label || at == std::to_string(row.index);
  }

  // The thinning what-if for checkpoint `at` (kept[at] is its input
  // until Add keeps it): what each precision's thinned checkpoint stores,
  // a base every base_interval and otherwise a delta against the previous
  // thinned one, and the error it takes.
  Status AddThinning(size_t at, const CheckpointRow& row, const Kept& current) {
    if (at == 0) {
      for (const codec::Precision& p :
           options.thinning.value_or(ThinningOutcome::DefaultsFor(current.input->checkpoint.layout()))) {
        analysis.thinning.push_back(ThinningOutcome{p});
      }
    }
    const bool base = at % options.base_interval == 0;
    analysis.exact_stored += base ? row.standalone.automatic : row.vs_previous.automatic;
    for (ThinningOutcome& outcome : analysis.thinning) {
      const formats::CheckpointView exact = current.coded();
      const formats::ThinnedSource thinned(exact, outcome.precision);
      const formats::CheckpointView target{&thinned, exact.layout, {}};
      std::optional<formats::ThinnedSource> previous;
      std::optional<formats::CheckpointView> against;
      if (!base) {
        previous.emplace(kept.at(at - 1).coded(), outcome.precision);
        against = formats::CheckpointView{&*previous, kept.at(at - 1).coded().layout, {}};
      }
      ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(target, against ? &*against : nullptr, options.policy,
                                                       Coders::kAutoOnly, pool));
      outcome.stored_bytes += sizes.automatic;
      CountingSink discard;
      ZIPNN_ASSIGN_OR_RETURN(std::vector<formats::TensorError> errors,
                             formats::Thin(exact, outcome.precision, discard));
      for (const formats::TensorError& e : errors) {
        outcome.max_abs = std::max(outcome.max_abs, e.max_abs);
        outcome.max_rel = std::max(outcome.max_rel, e.max_rel);
        outcome.changed += e.changed;
        outcome.values += e.values;
      }
    }
    return OkStatus();
  }

  Status Add(std::shared_ptr<Input> input) {
    const size_t at = analysis.rows.size();
    CheckpointRow row;
    row.index = at;
    row.label = input->label;
    row.source = input->source;
    row.subject = input->subject;
    row.raw_bytes = input->checkpoint.file().size();
    row.format = formats::FormatName(input->checkpoint.layout().format);

    Kept current{input, ContentId{}, 0};
    ZIPNN_ASSIGN_OR_RETURN(row.standalone,
                           MeasureSizes(current.coded(), nullptr, options.policy, Coders::kAll, pool, &current.id));
    current.standalone = row.standalone.automatic;
    row.id = current.id.Hex();
    const formats::CheckpointView target = current.coded();

    // Automatic delta sizes against earlier checkpoints, for the what-if.
    std::map<size_t, uint64_t> deltas;
    if (at > 0) {
      const formats::CheckpointView previous = kept.at(at - 1).coded();
      ZIPNN_ASSIGN_OR_RETURN(row.vs_previous, MeasureSizes(target, &previous, options.policy, Coders::kAll, pool));
      deltas[at - 1] = row.vs_previous.automatic;
      row.base = PeriodicBase(at);
      if (*row.base == at - 1) {
        row.vs_base = row.vs_previous;
      } else {
        const formats::CheckpointView base = kept.at(*row.base).coded();
        ZIPNN_ASSIGN_OR_RETURN(row.vs_base, MeasureSizes(target, &base, options.policy, Coders::kAll, pool));
      }
      deltas[*row.base] = row.vs_base.automatic;
      row.reference = options.against == DeltaAgainst::kBase ? *row.base : at - 1;
    }

    const Kept* reference = row.reference ? &kept.at(*row.reference) : nullptr;
    const bool histogram = WantsHistogram(row);
    ZIPNN_ASSIGN_OR_RETURN(ScanResult scan, ScanTensors(input->checkpoint.file(), input->checkpoint.layout(),
                                                        reference ? &reference->input->checkpoint.file() : nullptr,
                                                        reference ? &reference->input->checkpoint.layout() : nullptr,
                                                        options.select, histogram, pool));
    Summarize(scan, row);
    if (histogram) {
      analysis.histogram_at = at;
      analysis.histograms = std::move(scan.histograms);
    }
    if (row.reference) {
      for (TensorChange& t : scan.tensors) {
        t.checkpoint = at;
        analysis.tensors.push_back(std::move(t));
      }
    }

    ZIPNN_RETURN_IF_ERROR(AddThinning(at, row, current));

    // With the newest whole, the version before this one is re-stored as a
    // delta of this one (the second half of a stretch): its size.
    uint64_t reverse = 0;
    if (at > 0 && std::any_of(scenarios.begin(), scenarios.end(), [](const Scenario& s) { return s.Whole(); })) {
      const formats::CheckpointView previous = kept.at(at - 1).coded();
      ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(previous, &target, options.policy, Coders::kAutoOnly, pool));
      reverse = sizes.automatic;
    }
    for (Scenario& s : scenarios) {
      // Where the version before this one goes decides where this one's
      // stretch begins.
      if (s.Whole() && at > 0) s.Demote(reverse);
      std::optional<uint64_t> delta;
      if (std::optional<size_t> against = s.Against(at)) {
        auto it = deltas.find(*against);
        if (it == deltas.end()) {
          const formats::CheckpointView base = kept.at(*against).coded();
          ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(target, &base, options.policy, Coders::kAutoOnly, pool));
          it = deltas.emplace(*against, sizes.automatic).first;
        }
        delta = it->second;
      }
      s.Store(at, current.standalone, delta);
    }

    // Keep what a later checkpoint may be compared with: this one (the next
    // one's previous), the latest periodic base, and the last base of every
    // policy that makes deltas against its base.
    kept[at] = std::move(current);
    std::set<size_t> needed = {at, at / options.base_interval * options.base_interval};
    for (const Scenario& s : scenarios) {
      if (s.outcome.against == DeltaAgainst::kBase || s.Whole()) needed.insert(s.last_base);
    }
    for (auto it = kept.begin(); it != kept.end();) {
      it = needed.count(it->first) != 0 ? std::next(it) : kept.erase(it);
    }
    analysis.rows.push_back(std::move(row));
    return OkStatus();
  }
};

Analyzer::Analyzer(Options options) : state_(std::make_unique<State>(std::move(options))) {}
Analyzer::~Analyzer() = default;

Status Analyzer::Add(std::shared_ptr<Input> input) { return state_->Add(std::move(input)); }

Analysis Analyzer::Finish() {
  for (Scenario& s : state_->scenarios) {
    s.Finish();
    state_->analysis.policies.push_back(s.outcome);
  }
  state_->scenarios.clear();
  state_->kept.clear();
  return std::move(state_->analysis);
}

Result<std::function<bool(const std::string&)>> TensorsMatching(const std::string& glob, const std::string& regex) {
  if (!glob.empty() && !regex.empty()) {
    return InvalidArgument("give --tensors or --tensors-regex, not both");
  }
  if (!glob.empty()) {
    return std::function<bool(const std::string&)>(
        [glob](const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
  }
  if (!regex.empty()) {
    std::regex re;
    try {
      re = std::regex(regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--tensors-regex '" + regex + "' is not a valid regular expression (" + e.what() + ")");
    }
    return std::function<bool(const std::string&)>(
        [re](const std::string& name) { return std::regex_search(name, re); });
  }
  return std::function<bool(const std::string&)>();
}

}  // namespace zipnn::analyze
