#include "daemon/admission/admission.hpp"

#include "common/enum_names.hpp"
#include "common/text.hpp"
#include "daemon/store/store.hpp"
#include "proto/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <map>

namespace ralph {
namespace {

constexpr std::int64_t hour_ms = 3600 * 1000;
constexpr std::int64_t day_ms = 24 * hour_ms;
constexpr const char* scheduler_key = "scheduler";
constexpr const char* budget_key = "budget";

// What a budget counts of each attempt.
enum class charge { runs, tokens, cost };

// The budgets that count something else than runs, by name.
constexpr std::array<enum_name<charge>, 2> charged_budgets{{
    {charge::tokens, "tokens_per_day"},
    {charge::cost, "cost_per_day_usd"},
}};

charge charge_of(const std::string& budget_name) {
    return find_value(charged_budgets, budget_name).value_or(charge::runs);
}

double amount(const attempt_use_table::use_piece& piece, charge what) {
    switch (what) {
        case charge::runs:
            return double(piece.runs);
        case charge::tokens:
            return double(piece.tokens);
        case charge::cost:
            return piece.cost_usd;
    }
    return 0;
}

// A budget used up frees up when enough of the oldest attempts of its window have left it to
// bring its use under the limit: takes `pieces` (oldest first) out of `use` one by one until its
// use left is under the limit, and sets frees_at to when the attempt that did it leaves the
// window. A minute or hour that would bring it under is taken in its finer pieces
// (attempt_use_table::use_within), down to that attempt. True once under the limit.
bool find_frees_at(proto::budget_use& use, charge what, double& remaining,
                   const std::vector<attempt_use_table::use_piece>& pieces, store& db) {
    for (const attempt_use_table::use_piece& piece : pieces) {
        const double taken = amount(piece, what);
        if (piece.span > 0 && remaining - taken < use.limit) {
            // It holds the attempt that brings the use under the limit.
            if (find_frees_at(use, what, remaining, db.attempt_use().use_within(piece), db))
                return true;
            continue;  // its finer pieces did not quite add up to it (the costs' rounding)
        }
        remaining -= taken;
        use.frees_at = piece.start + use.window_ms;
        if (remaining < use.limit) return true;
    }
    return false;
}

void add_limit(std::vector<proto::budget_use>& limits, const char* name, std::int64_t loop_id,
               double limit, std::int64_t window_ms) {
    if (limit > 0) limits.push_back({name, loop_id, 0, limit, window_ms, 0});
}

std::vector<proto::budget_use> global_limits(const proto::budget_limits& b) {
    std::vector<proto::budget_use> limits;
    add_limit(limits, "iterations_per_hour", 0, double(b.iterations_per_hour), hour_ms);
    add_limit(limits, "iterations_per_day", 0, double(b.iterations_per_day), day_ms);
    add_limit(limits, "tokens_per_day", 0, double(b.tokens_per_day), day_ms);
    add_limit(limits, "cost_per_day_usd", 0, b.cost_per_day_usd, day_ms);
    return limits;
}

std::vector<proto::budget_use> loop_limits(const proto::loop_info& loop) {
    std::vector<proto::budget_use> limits;
    add_limit(limits, "iterations_per_hour", loop.id, double(loop.spec.iterations_per_hour),
              hour_ms);
    add_limit(limits, "iterations_per_day", loop.id, double(loop.spec.iterations_per_day), day_ms);
    return limits;
}

std::string describe_budget(const proto::budget_use& use) {
    std::string owner = use.loop_id == 0 ? "global" : fmt::format("loop {}'s", use.loop_id);
    std::string name = use.name;
    std::replace(name.begin(), name.end(), '_', ' ');
    if (charge_of(use.name) == charge::cost)
        return fmt::format("{} budget {} used up (${:.2f} of ${:.2f})", owner, name, use.used,
                           use.limit);
    return fmt::format("{} budget {} used up ({} of {})", owner, name, std::int64_t(use.used),
                       std::int64_t(use.limit));
}

// The exhausted budget that frees up last, as a wait verdict; go when none is exhausted.
admission::verdict wait_for_budgets(const std::vector<proto::budget_use>& uses) {
    admission::verdict result;
    for (const auto& use : uses)
        if (use.frees_at > 0 && use.frees_at > result.until_ms)
            result = {admission::verdict::kind::wait, "waiting for the " + describe_budget(use),
                      use.frees_at, true};
    return result;
}

[[noreturn]] void invalid_window(std::string_view text) {
    throw proto::rpc_error(
        proto::error_kind::invalid_params,
        "time window: expected HH:MM-HH:MM (e.g. 01:00-07:00), got '" + std::string(text) + "'");
}

int parse_clock_time(std::string_view text) {
    auto invalid = [&] { invalid_window(text); };
    if (text.size() != 5 || text[2] != ':') invalid();
    for (std::size_t i : {0, 1, 3, 4})
        if (!text::is_digit(text[i])) invalid();
    int hours = (text[0] - '0') * 10 + (text[1] - '0');
    int minutes = (text[3] - '0') * 10 + (text[4] - '0');
    if (hours > 23 || minutes > 59) invalid();
    return hours * 60 + minutes;
}

}  // namespace

std::optional<time_window> parse_time_window(std::string_view text) {
    if (text.empty()) return std::nullopt;
    auto dash = text.find('-');
    if (dash == std::string_view::npos) invalid_window(text);
    time_window window{parse_clock_time(text.substr(0, dash)),
                       parse_clock_time(text.substr(dash + 1))};
    if (window.start_minute == window.end_minute)
        throw proto::rpc_error(proto::error_kind::invalid_params,
                               "time window: start and end are the same; give \"\" for no window");
    return window;
}

std::int64_t next_window_open(const time_window& window, std::int64_t now_ms) {
    std::time_t now_s = std::time_t(now_ms / 1000);
    std::tm local{};
    ::localtime_r(&now_s, &local);
    int minute = local.tm_hour * 60 + local.tm_min;
    bool open = window.start_minute < window.end_minute
                    ? minute >= window.start_minute && minute < window.end_minute
                    : minute >= window.start_minute || minute < window.end_minute;
    if (open) return now_ms;
    std::tm opens = local;
    opens.tm_hour = window.start_minute / 60;
    opens.tm_min = window.start_minute % 60;
    opens.tm_sec = 0;
    opens.tm_isdst = -1;
    if (minute > window.start_minute) ++opens.tm_mday;  // today's opening has passed
    return std::int64_t(std::mktime(&opens)) * 1000;
}

admission::admission(store& db, std::string account) : db_(db), account_(std::move(account)) {
    if (auto stored = db_.settings().setting(scheduler_key))
        settings_ = stored->get<proto::scheduler_settings>();
    if (auto stored = db_.settings().setting(budget_key))
        budgets_ = stored->get<proto::budget_limits>();
    window_ = parse_time_window(settings_.window);
}

void admission::set_scheduler_settings(const proto::scheduler_settings& settings) {
    window_ = parse_time_window(settings.window);
    settings_ = settings;
    db_.settings().set_setting(scheduler_key, settings_);
}

void admission::set_budgets(const proto::budget_limits& budgets) {
    budgets_ = budgets;
    db_.settings().set_setting(budget_key, budgets_);
}

std::vector<proto::budget_use> admission::measure(const std::vector<proto::budget_use>& limits,
                                                  std::int64_t now_ms) {
    std::vector<proto::budget_use> uses;
    // The windows' sums, by length: two reads for the four global budgets.
    std::map<std::int64_t, attempt_use_table::use_piece> windows;
    for (proto::budget_use use : limits) {
        // A window of length W at now holds the attempts started after now - W.
        const std::int64_t since = now_ms - use.window_ms + 1;
        auto window = windows.find(use.window_ms);
        if (window == windows.end())
            window = windows.emplace(use.window_ms, db_.attempt_use().use_since(since, use.loop_id))
                         .first;
        const charge what = charge_of(use.name);
        use.used = amount(window->second, what);
        double remaining = use.used;
        if (remaining >= use.limit)
            find_frees_at(use, what, remaining,
                          db_.attempt_use().use_pieces_since(since, use.loop_id), db_);
        uses.push_back(std::move(use));
    }
    return uses;
}

std::vector<proto::budget_use> admission::budget_use(std::int64_t now_ms,
                                                     const proto::loop_info* loop) {
    auto uses = measure(global_limits(budgets_), now_ms);
    if (loop) {
        auto own = measure(loop_limits(*loop), now_ms);
        uses.insert(uses.end(), own.begin(), own.end());
    }
    return uses;
}

admission::verdict admission::global(std::int64_t now_ms) {
    if (settings_.paused) return {verdict::kind::stay_queued, "the scheduler is paused", 0};
    if (std::int64_t opens = window_opens_at(now_ms); opens > now_ms)
        return {verdict::kind::wait, fmt::format("outside the time window {}", settings_.window),
                opens};
    return wait_for_budgets(measure(global_limits(budgets_), now_ms));
}

std::int64_t admission::window_opens_at(std::int64_t now_ms) const {
    return window_ ? next_window_open(*window_, now_ms) : now_ms;
}

admission::verdict admission::for_quotas(const std::vector<std::string>& quotas,
                                         std::int64_t now_ms) {
    verdict earliest;
    for (const auto& quota : quotas) {
        const auto hold = db_.holds().agent_hold_of(quota, account_, now_ms);
        if (!hold) return {};
        if (earliest.go() || hold->until < earliest.until_ms)
            earliest = {verdict::kind::wait,
                        // Whose limit it is: the account, and the host that hit it.
                        "waiting for the reset of account " + account_ + "'s " + hold->reason +
                            (hold->origin.empty() ? "" : ", learnt from " + hold->origin),
                        hold->until, true};
    }
    return earliest;
}

bool admission::any_agent_held(std::int64_t now_ms) {
    const std::vector<proto::agent_hold> holds = db_.holds().agent_holds(now_ms);
    return std::any_of(holds.begin(), holds.end(),
                       [this](const auto& hold) { return hold.account == account_; });
}

proto::agent_choice admission::pick_agent(const proto::submit_params& spec, std::int64_t now_ms) {
    const std::vector<proto::agent_choice> agents = proto::agents_of(spec);
    for (const auto& choice : agents)
        if (!db_.holds().agent_hold_of(proto::quota_of(proto::on_agent(spec, choice)), account_,
                                       now_ms))
            return choice;
    return agents.front();
}

admission::verdict admission::for_loop(const proto::loop_info& loop, std::int64_t now_ms) {
    const auto& spec = loop.spec;
    const auto tokens = loop.usage.input_tokens + loop.usage.output_tokens;
    if (spec.max_tokens > 0 && tokens >= spec.max_tokens)
        return {verdict::kind::end,
                fmt::format("reached its token cap ({} of {})", tokens, spec.max_tokens), 0};
    const double cost = loop.usage.cost_usd.value_or(0);
    if (spec.max_cost_usd > 0 && cost >= spec.max_cost_usd)
        return {verdict::kind::end,
                fmt::format("reached its cost cap (${:.2f} of ${:.2f})", cost, spec.max_cost_usd),
                0};
    return wait_for_budgets(measure(loop_limits(loop), now_ms));
}

admission::verdict admission::check(const proto::loop_info& loop, std::int64_t now_ms) {
    if (auto v = global(now_ms); !v.go()) return v;
    if (auto v = for_quotas(proto::quotas_of(loop.spec), now_ms); !v.go()) return v;
    return for_loop(loop, now_ms);
}

}  // namespace ralph
