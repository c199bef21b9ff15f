// The schema's migrations, in order (see migrations.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace ralph {

const std::vector<std::string_view>& schema_migrations();

}  // namespace ralph
